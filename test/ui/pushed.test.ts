/**
 * The web interface's "pushed" is the core's (registry/activity.ts): the later of berth.json's
 * `pushed` and the revision link's time, so a revision written by Distribution (no berth.json) has one.
 */
import assert from 'node:assert/strict';
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import * as layout from '../../src/registry/layout.js';
import type { Digest } from '../../src/registry/digest.js';

describe('web interface: when a manifest was pushed', () => {
  let registry: TestRegistry;
  let image: Image;
  before(async () => {
    registry = await startBerth({}, { driver: 'filesystem' });
    image = await pushImageOK(registry.url, 'lib/app', buildImage('oci-manifest', { layers: 1, layerSize: 32 }), 'v1');
  });
  after(() => registry?.stop());

  it('reports the revision link time for a revision without berth.json (as Distribution writes it)', async () => {
    const digest = image.digest as Digest;
    await rm(join(registry.root!, layout.manifestRevisionMeta('lib/app', digest)));
    const linked = (await stat(join(registry.root!, layout.manifestRevisionLink('lib/app', digest)))).mtime;
    const res = await fetch(`${registry.url}/ui/api/repositories/lib/app/manifests/${digest}`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { pushed?: string };
    assert.equal(body.pushed, linked.toISOString());
  });
});
