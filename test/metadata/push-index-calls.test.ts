/**
 * What the metadata index costs a push in storage calls: none. An upload's completion links the
 * blob before its data is moved into blobs/ (uploads.ts); the index is told once the data is
 * there, with the size the upload knows, so it adds no stat of the data, and no attempt to rescue
 * it from online collection's trash (both missed on every blob before: docs/performance.md,
 * "Pushes with the metadata index").
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FileInfo } from '../../src/storage/driver.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';

/** the store's stats and moves, as "method path", an upload's id as UUID */
class RecordingDriver extends ForwardingDriver {
  calls: string[] = [];
  private note(call: string): void {
    this.calls.push(call.replace(/_uploads\/[0-9a-f-]+\//g, '_uploads/UUID/'));
  }
  override stat(path: string): Promise<FileInfo> {
    this.note(`stat ${path}`);
    return super.stat(path);
  }
  override move(src: string, dst: string): Promise<void> {
    this.note(`move ${src} ${dst}`);
    return super.move(src, dst);
  }
}

describe('a push with the metadata index', () => {
  let dir: string;
  const registries: TestRegistry[] = [];
  const drivers: RecordingDriver[] = [];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-push-index-calls-'));
    for (const metadata of [{ sqlite: { path: join(dir, 'index.sqlite') } }, { enabled: false }]) {
      registries.push(await startBerth({ metadata }, { wrapDriver: (inner) => drivers[drivers.push(new RecordingDriver(inner)) - 1] }));
    }
  });
  after(async () => {
    for (const registry of registries) await registry.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('makes the same stats and moves as without it: none of the data it is about to store', async () => {
    const image = buildImage('oci-manifest');
    const [indexed, plain] = drivers;
    for (const [i, driver] of drivers.entries()) {
      driver.calls = [];
      await pushImageOK(registries[i].url, 'team/calls', image, 'v1');
    }
    // sorted: a manifest PUT checks its blobs concurrently
    assert.deepEqual([...indexed.calls].sort(), [...plain.calls].sort());
    // and the index has both links, with their sizes
    const usage = (await (await fetch(`${registries[0].url}/v2/_berth/ext/usage?namespace=team`)).json()) as { blobs: number; blobBytes: number };
    assert.deepEqual({ blobs: usage.blobs, blobBytes: usage.blobBytes }, { blobs: image.blobs.length, blobBytes: image.blobs.reduce((sum, b) => sum + b.data.length, 0) });
  });
});
