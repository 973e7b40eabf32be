/**
 * A PATCH or PUT sent again to the same upload URL after its bytes were stored (HAProxy's
 * `retry-on empty-response` after the instance that took them died, or a client's retry) must not
 * append them twice: the `_state` of the URL says where the upload stood when it was issued, and a
 * request with bytes that no longer start there is answered 416 with the `Range` the upload holds
 * and a `Location` to continue with (spec 3.1, 4.10), changing nothing.
 *
 * The re-sent PUT's first attempt must leave what a PUT leaves when its instance dies after storing
 * the body and before completing: the upload holding the body, not completed. On every driver a
 * PATCH of the same body to the same URL makes that state (the same append, without completion);
 * on the filesystem a real first PUT does, made to fail at the repository link after its append.
 */
import assert from 'node:assert/strict';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp, type App } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';
import { CountingDriver } from '../helpers/counting-driver.js';
import { CEPH_TOOLS, stopSharedCeph } from '../helpers/ceph.js';
import { needTools } from '../helpers/tools.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { sha256 } from '../helpers/blobs.js';

after(() => stopSharedCeph());

const NAME = 'resent/app';
const OCTETS = { 'content-type': 'application/octet-stream' };

for (const driver of ['filesystem', 'inmemory', 's3'] as const) {
  describe(`a re-sent upload request (${driver})`, driver === 's3' ? needTools(CEPH_TOOLS, 'the s3 driver') : {}, () => {
    let registry: TestRegistry;
    before(async () => {
      registry = await startBerth({}, { driver });
    });
    after(() => registry.stop());

    const abs = (location: string | null) => new URL(location!, registry.url);
    const withDigest = (location: URL, digest: string) => {
      const url = new URL(location);
      url.searchParams.set('digest', digest);
      return url;
    };

    /** a new upload holding `first`: the URL of its first PATCH and the Location that PATCH answered */
    async function uploadWith(first: Buffer<ArrayBuffer>): Promise<{ uuid: string; sent: URL; next: URL }> {
      const post = await fetch(`${registry.url}/v2/${NAME}/blobs/uploads/`, { method: 'POST' });
      assert.equal(post.status, 202);
      const sent = abs(post.headers.get('location'));
      const patch = await fetch(sent, { method: 'PATCH', body: first, headers: OCTETS });
      assert.equal(patch.status, 202);
      assert.equal(patch.headers.get('range'), `0-${first.length - 1}`);
      return { uuid: patch.headers.get('registry-upload-uuid')!, sent, next: abs(patch.headers.get('location')) };
    }

    /** what the upload holds, as its status (and on the filesystem, its data file) says */
    async function storedSize(location: URL, uuid: string): Promise<number> {
      const res = await fetch(location);
      assert.equal(res.status, 204);
      const size = Number(res.headers.get('range')!.split('-')[1]) + 1;
      if (registry.root) {
        const data = join(registry.root, 'docker/registry/v2/repositories', NAME, '_uploads', uuid, 'data');
        assert.equal((await stat(data)).size, size);
      }
      return size;
    }

    /** the refusal: 416, no body, the Range the upload holds and a Location issued at that size */
    async function assertRefused(res: Response, uuid: string, size: number): Promise<URL> {
      assert.equal(res.status, 416, await res.clone().text());
      assert.equal(await res.text(), '', 'the 416 of an upload request has no body (spec 4.10): no error code');
      assert.equal(res.headers.get('content-length'), '0');
      assert.equal(res.headers.get('range'), `0-${size - 1}`);
      assert.equal(res.headers.get('registry-upload-uuid'), uuid);
      const location = abs(res.headers.get('location'));
      assert.equal(location.pathname, `/v2/${NAME}/blobs/uploads/${uuid}`);
      return location;
    }

    async function assertServed(digest: string, data: Buffer): Promise<void> {
      const res = await fetch(`${registry.url}/v2/${NAME}/blobs/${digest}`);
      assert.equal(res.status, 200);
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), data);
    }

    it('a PATCH sent again to the URL of its first, stored attempt: 416, nothing appended, the upload goes on from the Location', async () => {
      const chunk = Buffer.from('ab');
      const { uuid, sent, next } = await uploadWith(chunk);

      const again = await fetch(sent, { method: 'PATCH', body: chunk, headers: OCTETS });
      const location = await assertRefused(again, uuid, 2);
      assert.equal(await storedSize(next, uuid), 2);

      const rest = Buffer.from('cd');
      const patch = await fetch(location, { method: 'PATCH', body: rest, headers: OCTETS });
      assert.equal(patch.status, 202);
      assert.equal(patch.headers.get('range'), '0-3');
      const whole = Buffer.concat([chunk, rest]);
      const put = await fetch(withDigest(abs(patch.headers.get('location')), sha256(whole)), { method: 'PUT' });
      assert.equal(put.status, 201, await put.text());
      await assertServed(sha256(whole), whole);
    });

    it('a PUT with bytes sent again after its first attempt stored them: 416, nothing appended, an empty PUT completes', async () => {
      const first = Buffer.from('ef');
      const last = Buffer.from('gh');
      const whole = Buffer.concat([first, last]);
      const { uuid, next } = await uploadWith(first);
      // the first attempt of the PUT stored its bytes, then its instance died
      const stored = await fetch(next, { method: 'PATCH', body: last, headers: OCTETS });
      assert.equal(stored.status, 202);

      const again = await fetch(withDigest(next, sha256(whole)), { method: 'PUT', body: last, headers: OCTETS });
      const location = await assertRefused(again, uuid, 4);
      assert.equal(await storedSize(location, uuid), 4);

      const put = await fetch(withDigest(location, sha256(whole)), { method: 'PUT' });
      assert.equal(put.status, 201, await put.text());
      assert.equal(put.headers.get('registry-content-digest'), sha256(whole));
      await assertServed(sha256(whole), whole);
    });

    if (driver === 'filesystem') {
      it('a PUT sent again after its first attempt stored its bytes and then failed to complete: 416, an empty PUT completes', async () => {
        const first = Buffer.from('qr');
        const last = Buffer.from('st');
        const whole = Buffer.concat([first, last]);
        const { uuid, next } = await uploadWith(first);
        // a file where the repository's link directory goes: the first attempt fails at the link, after the append
        const linkDir = join(registry.root!, 'docker/registry/v2/repositories', NAME, '_layers/sha256', sha256(whole).slice('sha256:'.length));
        await mkdir(dirname(linkDir), { recursive: true });
        await writeFile(linkDir, '');
        const url = withDigest(next, sha256(whole));
        const failed = await fetch(url, { method: 'PUT', body: last, headers: OCTETS });
        assert.equal(failed.status, 500);
        await rm(linkDir);
        assert.equal(await storedSize(next, uuid), 4);

        const again = await fetch(url, { method: 'PUT', body: last, headers: OCTETS });
        const location = await assertRefused(again, uuid, 4);
        assert.equal(await storedSize(location, uuid), 4);
        const put = await fetch(withDigest(location, sha256(whole)), { method: 'PUT' });
        assert.equal(put.status, 201, await put.text());
        await assertServed(sha256(whole), whole);
      });
    }

    it('a PUT sent again after its first attempt completed: 404 BLOB_UPLOAD_UNKNOWN, the blob stays served', async () => {
      const first = Buffer.from('ij');
      const last = Buffer.from('kl');
      const whole = Buffer.concat([first, last]);
      const { next } = await uploadWith(first);
      const url = withDigest(next, sha256(whole));
      const put = await fetch(url, { method: 'PUT', body: last, headers: OCTETS });
      assert.equal(put.status, 201);

      const again = await fetch(url, { method: 'PUT', body: last, headers: OCTETS });
      assert.equal(again.status, 404);
      assert.deepEqual((await again.json()).errors.map((e: { code: string }) => e.code), ['BLOB_UPLOAD_UNKNOWN']);
      await assertServed(sha256(whole), whole);
    });

    it('an older Location with a Content-Range that continues the upload is taken (the resume after a lost answer)', async () => {
      const chunk = Buffer.from('mn');
      const { uuid, sent, next } = await uploadWith(chunk);
      const rest = Buffer.from('op');
      const patch = await fetch(sent, { method: 'PATCH', body: rest, headers: { ...OCTETS, 'content-range': '2-3' } });
      assert.equal(patch.status, 202);
      assert.equal(patch.headers.get('range'), '0-3');
      assert.equal(await storedSize(next, uuid), 4);
      // the same chunk sent again: its Content-Range no longer continues the upload
      const again = await fetch(sent, { method: 'PATCH', body: rest, headers: { ...OCTETS, 'content-range': '2-3' } });
      await assertRefused(again, uuid, 4);
      assert.equal(await storedSize(next, uuid), 4);
    });
  });
}

describe('the refusal of a re-sent request costs no store call of its own', () => {
  const driver = new CountingDriver(new InMemoryDriver());
  let app: App;
  let url: string;
  before(async () => {
    const config = validateConfig({ version: '0.1', log: { level: 'error', accesslog: { disabled: true } }, storage: { inmemory: {} }, http: { addr: '127.0.0.1:0', secret: 'test-secret' } }, 'test');
    app = await createApp(config, { logger: pino({ level: 'silent' }), driver });
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(() => app.close());

  it('a re-sent PATCH reads startedat, opens the writer (its size is the check) and closes it, writing nothing', async () => {
    const post = await fetch(`${url}/v2/${NAME}/blobs/uploads/`, { method: 'POST' });
    const sent = new URL(post.headers.get('location')!, url);
    const first = await fetch(sent, { method: 'PATCH', body: Buffer.from('ab'), headers: OCTETS });
    assert.equal(first.status, 202);
    driver.calls = [];
    const again = await fetch(sent, { method: 'PATCH', body: Buffer.from('ab'), headers: OCTETS });
    assert.equal(again.status, 416);
    assert.deepEqual(driver.calls, ['getContent startedat', 'writer data', 'close data']);
  });
});
