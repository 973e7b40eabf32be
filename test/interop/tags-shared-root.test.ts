// berth keeps the tag list of a repository while the `_manifests/tags` directory's mtime says it is
// current (docs/decisions.md, "Tag-list cache"). Debian's docker-registry (CNCF Distribution
// 2.8.2) on the same filesystem root adds and deletes tags behind berth's back: berth's pages and
// Link must show every change at once. berth's driver here vouches for a directory 100 ms after its
// last change instead of 2 s, so the test waits little. berth keeps its metadata index: before each
// of berth's reads a reconciler pass runs (the pass berth's scheduler runs every
// metadata.reconcile.interval), so what Distribution wrote is in the index when berth lists from it.

import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp, type App } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { pushBlob, randomBlob, sha256 } from '../helpers/blobs.js';
import { indexDifferences, reconcileNow } from '../helpers/index-sync.js';
import { startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { assertTool, needTool } from '../helpers/tools.js';

const SETTLE_MS = 100;
const settle = () => new Promise<void>((r) => setTimeout(r, SETTLE_MS + 50));
const REPO = 'interop/tags';
const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';

describe("berth's cached tag lists follow tags pushed and deleted by Debian's docker-registry on the same root", needTool('docker-registry', 'the shared-root tags test'), () => {
  let root: string | undefined;
  let app: App | undefined;
  let berth = '';
  let ref: ReferenceRegistry | undefined;
  const layer = randomBlob(48);

  before(async () => {
    assertTool('docker-registry', 'the shared-root tags test');
    root = await mkdtemp(join(tmpdir(), 'berth-interop-tags-'));
    const config = validateConfig(
      { version: '0.1', log: { level: 'error', accesslog: { disabled: true } }, storage: { filesystem: { rootdirectory: root }, delete: { enabled: true } }, http: { addr: '127.0.0.1:0', secret: 's' }, metadata: {} },
      'test',
    );
    app = await createApp(config, { logger: pino({ level: 'silent' }), driver: new FilesystemDriver({ rootdirectory: root, settleMs: SETTLE_MS }) });
    berth = await app.listen({ host: '127.0.0.1', port: 0 });
    ref = await startReferenceRegistry({ rootdirectory: root, deleteEnabled: true, config: { log: { level: 'warn' } } });
    for (const url of [berth, ref.url]) assert.equal((await pushBlob(url, REPO, layer.data)).status, 201);
  });

  after(async () => {
    const results = await Promise.allSettled([app?.close(), ref?.stop()]);
    if (root) await rm(root, { recursive: true, force: true });
    for (const r of results) if (r.status === 'rejected') throw r.reason;
  });

  /** pushes an image of its own (a config naming the tag) as `tag`; returns the manifest digest */
  async function pushTag(url: string, tag: string): Promise<string> {
    const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] }, tag }));
    assert.equal((await pushBlob(url, REPO, config)).status, 201);
    const manifest = JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256(config), size: config.length },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: layer.digest, size: layer.data.length }],
    });
    const put = await fetch(`${url}/v2/${REPO}/manifests/${tag}`, { method: 'PUT', body: manifest, headers: { 'content-type': OCI_MANIFEST } });
    assert.equal(put.status, 201, `PUT ${tag} on ${url}: ${await put.text()}`);
    return sha256(manifest);
  }

  async function deleteOnReference(digest: string): Promise<void> {
    const res = await fetch(`${ref!.url}/v2/${REPO}/manifests/${digest}`, { method: 'DELETE' });
    assert.equal(res.status, 202, await res.text());
  }

  /** every tag berth lists, 2 a page following Link, and the Links */
  async function pagesOnBerth(): Promise<{ tags: string[]; links: string[] }> {
    const tags: string[] = [];
    const links: string[] = [];
    await reconcileNow({ app: app! });
    for (let next: string | null = `/v2/${REPO}/tags/list?n=2`; next !== null; ) {
      const res: Response = await fetch(`${berth}${next}`);
      assert.equal(res.status, 200);
      tags.push(...((await res.json()) as { tags: string[] }).tags);
      const link = res.headers.get('link');
      if (link !== null) links.push(link);
      next = link === null ? null : /^<([^>]+)>/.exec(link)![1];
    }
    return { tags, links };
  }

  /** the reference's whole list, sorted (it lists in directory order and ignores n) */
  async function onReference(): Promise<string[]> {
    const res = await fetch(`${ref!.url}/v2/${REPO}/tags/list`);
    assert.equal(res.status, 200);
    return (((await res.json()) as { tags: string[] | null }).tags ?? []).sort();
  }

  const linkAfter = (last: string) => `</v2/${REPO}/tags/list?n=2&last=${last}>; rel="next"`;

  async function assertBoth(tags: string[], links: string[]): Promise<void> {
    assert.deepEqual(await pagesOnBerth(), { tags, links });
    assert.deepEqual(await onReference(), tags);
  }

  it('adds and deletes by the reference show on berth at once, read right after or once the directory has settled', async () => {
    const digests: Record<string, string> = {};
    for (const tag of ['v1', 'v3', 'v5']) digests[tag] = await pushTag(berth, tag);
    await settle();
    await assertBoth(['v1', 'v3', 'v5'], [linkAfter('v3')]);
    await assertBoth(['v1', 'v3', 'v5'], [linkAfter('v3')]); // berth: from its cache

    digests.v2 = await pushTag(ref!.url, 'v2'); // right after berth's cached read
    await assertBoth(['v1', 'v2', 'v3', 'v5'], [linkAfter('v2')]);
    await settle();
    await assertBoth(['v1', 'v2', 'v3', 'v5'], [linkAfter('v2')]);

    await deleteOnReference(digests.v1);
    await assertBoth(['v2', 'v3', 'v5'], [linkAfter('v3')]);
    await settle();
    await assertBoth(['v2', 'v3', 'v5'], [linkAfter('v3')]);

    digests.v4 = await pushTag(ref!.url, 'v4');
    await settle(); // berth reads only once the directory has settled again: the new mtime tells
    await assertBoth(['v2', 'v3', 'v4', 'v5'], [linkAfter('v3')]);
    await deleteOnReference(digests.v2);
    await deleteOnReference(digests.v3);
    await settle();
    await assertBoth(['v4', 'v5'], []);

    await pushTag(ref!.url, 'v5'); // re-pointed: the same names
    await assertBoth(['v4', 'v5'], []);
    assert.deepEqual(await indexDifferences({ app: app! }), []);
  });
});
