/**
 * The listings the metadata index answers make no storage call: on S3 each would be a round trip
 * (the index rows of the bench, bench/lib/index-scale.ts, are milliseconds only if none is made).
 * The catalog and tag-list pages, usage and search from the first request; the web interface's
 * tag list by push time once the summaries of its images are kept (the first request reads each
 * image's manifest and config).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { FileInfo, FileWriter, PutOptions, WalkFn, WalkOptions } from '../../src/storage/driver.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';

/** every call on the store, as "method path" */
class RecordingDriver extends ForwardingDriver {
  calls: string[] = [];
  private note(method: string, path: string): void {
    this.calls.push(`${method} ${path}`);
  }
  override getContent(path: string): Promise<Buffer> {
    this.note('getContent', path);
    return super.getContent(path);
  }
  override putContent(path: string, data: Buffer, options?: PutOptions): Promise<void> {
    this.note('putContent', path);
    return super.putContent(path, data, options);
  }
  override reader(path: string, offset?: number, length?: number): Promise<Readable> {
    this.note('reader', path);
    return super.reader(path, offset, length);
  }
  override writer(path: string, append: boolean): Promise<FileWriter> {
    this.note('writer', path);
    return super.writer(path, append);
  }
  override stat(path: string): Promise<FileInfo> {
    this.note('stat', path);
    return super.stat(path);
  }
  override list(path: string): Promise<string[]> {
    this.note('list', path);
    return super.list(path);
  }
  override listNames(path: string): Promise<string[]> {
    this.note('listNames', path);
    return super.listNames(path);
  }
  override childrenVersion(path: string): Promise<string | undefined> {
    this.note('childrenVersion', path);
    return super.childrenVersion(path);
  }
  override walk(path: string, fn: WalkFn, options?: WalkOptions): Promise<void> {
    this.note('walk', path);
    return super.walk(path, fn, options);
  }
}

describe('listings answered by the metadata index', () => {
  let dir: string;
  let registry: TestRegistry;
  let driver: RecordingDriver;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-index-listings-'));
    registry = await startBerth({ metadata: { sqlite: { path: join(dir, 'index.sqlite') } } }, { wrapDriver: (inner) => (driver = new RecordingDriver(inner)) });
    const image = buildImage('oci-manifest', { annotations: { 'org.example.team': 'core' } });
    for (const name of ['team-00/big', 'team-07/app-000007', 'team-07/app-000107']) for (const tag of ['t00', 't01', 't02']) await pushImageOK(registry.url, name, image, tag);
  });
  after(async () => {
    await registry?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** the storage calls of one GET, after `warm` unmeasured ones */
  async function callsOf(path: string, warm = 0): Promise<string[]> {
    for (let i = 0; i < warm; i++) assert.equal((await fetch(`${registry.url}${path}`)).status, 200, path);
    driver.calls = [];
    const res = await fetch(`${registry.url}${path}`);
    assert.equal(res.status, 200, `${path}: ${await res.clone().text()}`);
    await res.arrayBuffer();
    return driver.calls;
  }

  for (const [what, path] of [
    ['catalog, first page', '/v2/_catalog?n=2'],
    ['catalog, a later page', '/v2/_catalog?n=2&last=team-00%2Fbig'],
    ['tags/list, first page', '/v2/team-00/big/tags/list?n=2'],
    ['tags/list, a later page', '/v2/team-00/big/tags/list?n=2&last=t00'],
    ['usage of a namespace', '/v2/_berth/ext/usage?namespace=team-07'],
    ['search', '/v2/_berth/ext/search?q=team-07%2Fapp-00'],
  ]) {
    it(`${what}: no storage call`, async () => {
      assert.deepEqual(await callsOf(path), []);
    });
  }

  it("the web interface's tag list by push time: no storage call once its images' summaries are kept", async () => {
    assert.deepEqual(await callsOf('/ui/api/repositories/team-00/big/tags/list?sort=pushed&desc=1', 1), []);
  });
});
