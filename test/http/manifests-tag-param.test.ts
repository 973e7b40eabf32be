/**
 * Pushing a manifest by digest with `tag` query parameters (the OCI distribution-spec's next
 * version, "Pushing Manifests"): "When pushing a manifest by digest, the registry MAY support the
 * pushing of tags specified by addition of `tag` query parameters. If a registry supports this, it:
 * SHOULD support pushing at least 10 tags per request; MAY return a `414 Request-URI Too Long`
 * status if too many tags are included in the request; MUST include an `OCI-Tag` response header
 * [...] for each accepted tag."
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { TAG_PARAM_LIMIT } from '../../src/http/handlers/manifests.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushContent, type Image } from '../helpers/images.js';

/** PUT the image's manifest by digest with one `tag` parameter per tag */
async function putWithTags(base: string, name: string, image: Image, tags: readonly string[]): Promise<Response> {
  await pushContent(base, name, image);
  const query = tags.map((tag) => `tag=${encodeURIComponent(tag)}`).join('&');
  return fetch(`${base}/v2/${name}/manifests/${image.digest}?${query}`, { method: 'PUT', body: image.body, headers: { 'content-type': image.mediaType } });
}

/** the tags named by the response's OCI-Tag field lines (each line may list several, comma-separated) */
function ociTags(res: Response): string[] {
  return (res.headers.get('oci-tag') ?? '').split(',').map((t) => t.trim()).filter((t) => t !== '');
}

async function resolve(base: string, name: string, tag: string): Promise<string | null> {
  const res = await fetch(`${base}/v2/${name}/manifests/${tag}`, { method: 'HEAD', headers: { accept: '*/*' } });
  return res.status === 200 ? res.headers.get('docker-content-digest') : null;
}

async function tagList(base: string, name: string): Promise<string[]> {
  const res = await fetch(`${base}/v2/${name}/tags/list`);
  if (res.status === 404) return [];
  return ((await res.json()) as { tags: string[] }).tags;
}

for (const driver of ['filesystem', 'inmemory'] as const) {
  describe(`PUT manifests/<digest>?tag= (${driver})`, () => {
    let registry: TestRegistry;
    before(async () => {
      registry = await startBerth({}, { driver });
    });
    after(() => registry?.stop());

    it("applies every tag of the spec's example and answers 201 with an OCI-Tag for each", async () => {
      const image = buildImage('oci-manifest');
      const tags = ['1.2.3', '1.2', '1', 'latest'];
      const res = await putWithTags(registry.url, 'param/example', image, tags);
      assert.equal(res.status, 201, await res.text());
      assert.equal(res.headers.get('docker-content-digest'), image.digest);
      assert.deepEqual(ociTags(res).sort(), [...tags].sort());
      for (const tag of tags) assert.equal(await resolve(registry.url, 'param/example', tag), image.digest, tag);
      assert.deepEqual((await tagList(registry.url, 'param/example')).sort(), [...tags].sort());
    });

    it('sends one OCI-Tag field line per tag applied', async () => {
      const image = buildImage('docker-v2');
      await pushContent(registry.url, 'param/lines', image);
      const url = new URL(`${registry.url}/v2/param/lines/manifests/${image.digest}?tag=a&tag=b`);
      const lines = await new Promise<string[]>((done, fail) => {
        const req = request(url, { method: 'PUT', headers: { 'content-type': image.mediaType, 'content-length': image.body.length } }, (res) => {
          res.resume();
          const raw = res.rawHeaders; // name, value, name, value, ...
          done(raw.flatMap((name, i) => (i % 2 === 0 && name.toLowerCase() === 'oci-tag' ? [raw[i + 1]] : [])));
        });
        req.on('error', fail);
        req.end(image.body);
      });
      assert.deepEqual(lines.sort(), ['a', 'b']);
    });

    it('accepts at least 10 tags in one request (the spec asks for 10)', async () => {
      const image = buildImage('oci-index');
      const tags = Array.from({ length: 10 }, (_, i) => `t${i}`);
      const res = await putWithTags(registry.url, 'param/ten', image, tags);
      assert.equal(res.status, 201, await res.text());
      assert.deepEqual(ociTags(res).sort(), [...tags].sort());
      assert.deepEqual((await tagList(registry.url, 'param/ten')).sort(), [...tags].sort());
    });

    it('applies the tags of a sha512 manifest (the conformance group tag-param-sha512)', async () => {
      const image = buildImage('oci-manifest', { algorithm: 'sha512' });
      assert.match(image.digest, /^sha512:/);
      const res = await putWithTags(registry.url, 'param/sha512', image, ['tag-param-sha512-0']);
      assert.equal(res.status, 201, await res.text());
      assert.deepEqual(ociTags(res), ['tag-param-sha512-0']);
      assert.equal(await resolve(registry.url, 'param/sha512', 'tag-param-sha512-0'), image.digest);
    });

    it('moves a tag that named another manifest', async () => {
      const first = buildImage('oci-manifest');
      const second = buildImage('oci-manifest');
      assert.equal((await putWithTags(registry.url, 'param/move', first, ['latest', 'v1'])).status, 201);
      assert.equal((await putWithTags(registry.url, 'param/move', second, ['latest'])).status, 201);
      assert.equal(await resolve(registry.url, 'param/move', 'latest'), second.digest);
      assert.equal(await resolve(registry.url, 'param/move', 'v1'), first.digest);
    });

    it('answers a repeated tag once', async () => {
      const image = buildImage('oci-manifest');
      const res = await putWithTags(registry.url, 'param/repeat', image, ['x', 'x']);
      assert.equal(res.status, 201);
      assert.deepEqual(ociTags(res), ['x']);
    });

    it(`answers 414 beyond ${TAG_PARAM_LIMIT} tags and stores nothing`, async () => {
      const image = buildImage('oci-manifest');
      const tags = Array.from({ length: TAG_PARAM_LIMIT + 1 }, (_, i) => `many-${i}`);
      const res = await putWithTags(registry.url, 'param/many', image, tags);
      assert.equal(res.status, 414);
      const body = (await res.json()) as { errors: { code: string; message: string }[] };
      assert.equal(body.errors[0].code, 'TAG_INVALID');
      assert.match(body.errors[0].message, /at most 100/);
      assert.equal((await fetch(`${registry.url}/v2/param/many/manifests/${image.digest}`, { method: 'HEAD', headers: { accept: '*/*' } })).status, 404);
      assert.deepEqual(await tagList(registry.url, 'param/many'), []);
    });

    it('refuses an invalid tag with 400 TAG_INVALID and stores nothing', async () => {
      const image = buildImage('oci-manifest');
      const res = await putWithTags(registry.url, 'param/invalid', image, ['good', '-bad']);
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as { errors: { code: string }[] }).errors[0].code, 'TAG_INVALID');
      assert.equal((await fetch(`${registry.url}/v2/param/invalid/manifests/${image.digest}`, { method: 'HEAD', headers: { accept: '*/*' } })).status, 404);
    });

    it('refuses tag parameters beside a tag in the URL (they belong to a push by digest)', async () => {
      const image = buildImage('oci-manifest');
      await pushContent(registry.url, 'param/bytag', image);
      const res = await fetch(`${registry.url}/v2/param/bytag/manifests/main?tag=other`, { method: 'PUT', body: image.body, headers: { 'content-type': image.mediaType } });
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as { errors: { code: string }[] }).errors[0].code, 'TAG_INVALID');
      assert.equal(await resolve(registry.url, 'param/bytag', 'other'), null);
    });

    it('sends no OCI-Tag on a push by digest without tag parameters', async () => {
      const image = buildImage('oci-manifest');
      await pushContent(registry.url, 'param/none', image);
      const res = await fetch(`${registry.url}/v2/param/none/manifests/${image.digest}`, { method: 'PUT', body: image.body, headers: { 'content-type': image.mediaType } });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get('oci-tag'), null);
    });
  });
}
