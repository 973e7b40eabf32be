/**
 * The audit log in the web interface: /ui/api/audit pages newest first, filters by repository,
 * actor and action, and answers only the users audit.readers names (others 403, anonymous 401).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage } from '../helpers/images.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { FLUSH_MS } from '../../src/audit/sink.js';

const AUDITOR = basic('auditor', 'a-secret');
const ALICE = basic('alice', 'alice-secret');

interface Page {
  records: { at: string; actor?: string; action: string; repository?: string; target?: string; outcome: string }[];
  next?: string;
}

describe('audit log web view', () => {
  let dir: string;
  let registry: TestRegistry;
  const clock = new ManualClock();
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-audit-ui-'));
    await writeHtpasswd(join(dir, 'htpasswd'), { alice: 'alice-secret', auditor: 'a-secret' });
    registry = await startBerth({
      auth: { htpasswd: { realm: 'test', path: join(dir, 'htpasswd') }, access: { '**': { alice: ['pull', 'push', 'delete'] } } },
      audit: { readers: ['auditor'] },
    }, { clock });
    for (const name of ['team/a', 'team/b', 'team/a']) {
      const image = buildImage('oci-manifest', { layers: 1 });
      for (const blob of image.blobs) {
        const res = await fetch(`${registry.url}/v2/${name}/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data, headers: { authorization: ALICE } });
        assert.equal(res.status, 201);
      }
      const res = await fetch(`${registry.url}/v2/${name}/manifests/latest`, { method: 'PUT', body: image.body, headers: { authorization: ALICE, 'content-type': image.mediaType } });
      assert.equal(res.status, 201);
    }
    assert.equal((await fetch(`${registry.url}/v2/`, { headers: { authorization: basic('mallory', 'x') } })).status, 401);
    // the sink writes a second later
    await clock.advance(FLUSH_MS);
  });
  after(async () => {
    await registry?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const page = async (query: string, authorization = AUDITOR): Promise<Page> => {
    const res = await fetch(`${registry.url}/ui/api/audit?${query}`, { headers: { authorization } });
    assert.equal(res.status, 200, await res.clone().text());
    return (await res.json()) as Page;
  };

  it('filters by repository, actor and action, newest first', async () => {
    const manifests = await page('repository=team/a&action=push');
    const tagged = manifests.records.filter((r) => r.target === 'latest');
    assert.equal(tagged.length, 2);
    assert.ok(manifests.records.every((r) => r.repository === 'team/a' && r.action === 'push' && r.actor === 'alice'));
    const times = manifests.records.map((r) => r.at);
    assert.deepEqual(times, [...times].sort().reverse());
    const failed = await page('actor=mallory');
    assert.deepEqual(failed.records.map((r) => [r.action, r.outcome]), [['sign-in', 'failed']]);
    assert.deepEqual((await page('action=delete')).records, []);
  });

  it('pages by `next` without repeating or skipping a record', async () => {
    const all = (await page('n=200')).records;
    const seen: Page['records'] = [];
    let last: string | undefined;
    do {
      const p = await page(`n=2${last ? `&last=${encodeURIComponent(last)}` : ''}`);
      seen.push(...p.records);
      last = p.next;
    } while (last);
    assert.deepEqual(seen, all);
    assert.ok(all.length >= 7, `${all.length} records`);
  });

  it('answers only the readers: another user 403, anonymous 401', async () => {
    const other = await fetch(`${registry.url}/ui/api/audit`, { headers: { authorization: ALICE } });
    assert.equal(other.status, 403);
    assert.match(((await other.json()) as { errors: { message: string }[] }).errors[0].message, /user "alice" may not read the audit log: audit.readers/);
    assert.equal((await fetch(`${registry.url}/ui/api/audit`)).status, 401);
  });
});
