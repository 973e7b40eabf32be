/**
 * A manifest DELETE cut short (a SIGKILL, a store failure) must leave a consistent repository: the
 * 30-minute soak found a tag naming a manifest whose revision was gone (the revision was deleted
 * before its tags). Here the storage driver fails the n-th `delete` of one manifest DELETE, for
 * every n; after each, every tag in tags/list resolves, and the client's retried DELETE succeeds
 * (202, or 404 when only the referrers entry was left, which the referrers list already skips) and
 * leaves neither tag, revision nor referrer.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startBerth } from '../helpers/berth.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import type { StorageDriver } from '../../src/storage/driver.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';

const REPO = 'cut/app';

/** fails its `failAt`-th delete (counting from when it is armed), as a process killed there would stop */
class DeleteCutter extends ForwardingDriver {
  deletes = 0;
  failAt = Infinity;
  override async delete(path: string): Promise<void> {
    if (++this.deletes === this.failAt) throw new Error(`delete ${this.deletes} cut: ${path}`);
    return super.delete(path);
  }
  arm(failAt: number): void {
    this.deletes = 0;
    this.failAt = failAt;
  }
}

async function tagsOf(url: string): Promise<string[]> {
  const res = await fetch(`${url}/v2/${REPO}/tags/list`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { tags: string[] | null }).tags ?? [];
}

for (const driver of ['filesystem', 'inmemory'] as const) {
  describe(`a manifest DELETE cut at any storage delete (${driver})`, () => {
    it('leaves every listed tag resolvable, and a retried DELETE removes tags and revision', { timeout: 60_000 }, async () => {
      let cutter!: DeleteCutter;
      const registry = await startBerth({}, { driver, wrapDriver: (inner) => (cutter = new DeleteCutter(inner)) });
      try {
        const subject = await pushImageOK(registry.url, REPO, buildImage('oci-manifest'), 'base');
        // one image under two tags with a subject: two tag deletions, the revision, the referrers entry
        const push = async (): Promise<Image> => {
          const image = await pushImageOK(registry.url, REPO, buildImage('oci-manifest', { subject }), 'one');
          assert.equal((await fetch(`${registry.url}/v2/${REPO}/manifests/two`, { method: 'PUT', body: image.body, headers: { 'content-type': image.mediaType } })).status, 201);
          return image;
        };
        const clean = await push();
        cutter.arm(Infinity);
        assert.equal((await fetch(`${registry.url}/v2/${REPO}/manifests/${clean.digest}`, { method: 'DELETE' })).status, 202);
        const steps = cutter.deletes;
        assert.ok(steps >= 4, `a DELETE deletes ${steps} paths`);

        for (let n = 1; n <= steps; n++) {
          const image = await push();
          cutter.arm(n);
          const cut = await fetch(`${registry.url}/v2/${REPO}/manifests/${image.digest}`, { method: 'DELETE' });
          assert.equal(cut.status, 500, `cut at delete ${n}: ${await cut.text()}`);
          cutter.arm(Infinity);
          for (const tag of await tagsOf(registry.url)) {
            const got = await fetch(`${registry.url}/v2/${REPO}/manifests/${tag}`, { headers: { accept: image.mediaType } });
            assert.equal(got.status, 200, `cut at delete ${n}: tag ${tag} is listed but answers ${got.status}`);
          }
          // only the last step (the referrers entry) comes after the revision: a retry then finds the manifest gone
          const whole = await fetch(`${registry.url}/v2/${REPO}/manifests/${image.digest}`, { headers: { accept: image.mediaType } });
          assert.equal(whole.status, n < steps ? 200 : 404, `cut at delete ${n}: GET by digest`);
          const retried = await fetch(`${registry.url}/v2/${REPO}/manifests/${image.digest}`, { method: 'DELETE' });
          assert.equal(retried.status, n < steps ? 202 : 404, `cut at delete ${n}: the retried DELETE answered ${retried.status}`);
          assert.deepEqual(await tagsOf(registry.url), ['base'], `cut at delete ${n}`);
          assert.equal((await fetch(`${registry.url}/v2/${REPO}/manifests/${image.digest}`, { headers: { accept: image.mediaType } })).status, 404);
          const referrers = (await (await fetch(`${registry.url}/v2/${REPO}/referrers/${subject.digest}`)).json()) as { manifests: unknown[] };
          assert.deepEqual(referrers.manifests, [], `cut at delete ${n}: no referrer left`);
        }
      } finally {
        await registry.stop();
      }
    });
  });
}
