/** A real client: skopeo pushes, inspects, lists, copies, pulls and deletes through berth. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { writeOCILayout, type LayoutImage } from '../helpers/oci-layout.js';
import { assertTool, needTool } from '../helpers/tools.js';

const run = promisify(execFile);
const skopeo = (...args: string[]) => run('skopeo', args, { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });

describe('skopeo against berth', needTool('skopeo', 'the real-client smoke test'), () => {
  let registry: TestRegistry;
  let work: string;
  let image: LayoutImage;
  let host: string;

  before(async () => {
    assertTool('skopeo', 'the real-client smoke test');
    registry = await startBerth();
    host = new URL(registry.url).host;
    work = await mkdtemp(join(tmpdir(), 'berth-skopeo-'));
    image = await writeOCILayout(join(work, 'layout'), { layerSizes: [1024, 300_000, 2_000_000] });
  });
  after(async () => {
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('copies an OCI layout in, inspects it and lists its tags', async () => {
    await skopeo('copy', '--dest-tls-verify=false', `oci:${image.dir}:${image.tag}`, `docker://${host}/smoke/image:1.0`);
    const inspected = JSON.parse((await skopeo('inspect', '--tls-verify=false', `docker://${host}/smoke/image:1.0`)).stdout);
    assert.equal(inspected.Digest, image.manifestDigest);
    assert.deepEqual(inspected.Layers, image.blobDigests.slice(1));
    const tags = JSON.parse((await skopeo('list-tags', '--tls-verify=false', `docker://${host}/smoke/image`)).stdout);
    assert.deepEqual(tags.Tags, ['1.0']);
  });

  it('copies between repositories and pulls back the same bytes', async () => {
    await skopeo('copy', '--src-tls-verify=false', '--dest-tls-verify=false', `docker://${host}/smoke/image:1.0`, `docker://${host}/smoke/copy:2.0`);
    const out = join(work, 'pulled');
    await skopeo('copy', '--src-tls-verify=false', `docker://${host}/smoke/copy:2.0`, `dir:${out}`);
    for (const digest of image.blobDigests) {
      const pulled = await readFile(join(out, digest.slice(7)));
      const original = await readFile(join(image.dir, 'blobs/sha256', digest.slice(7)));
      assert.ok(pulled.equals(original), digest);
    }
    const catalog = (await (await fetch(`${registry.url}/v2/_catalog`)).json()) as { repositories: string[] };
    assert.deepEqual(catalog.repositories, ['smoke/copy', 'smoke/image']);
  });

  it('deletes by tag (skopeo resolves the digest) and the manifest is gone', async () => {
    await skopeo('delete', '--tls-verify=false', `docker://${host}/smoke/copy:2.0`);
    const res = await fetch(`${registry.url}/v2/smoke/copy/manifests/${image.manifestDigest}`);
    assert.equal(res.status, 404);
    assert.equal((await fetch(`${registry.url}/v2/smoke/image/manifests/1.0`)).status, 200);
  });
});
