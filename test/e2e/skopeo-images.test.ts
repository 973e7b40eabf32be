/**
 * skopeo (Debian's, a real client) against berth, with images the test builds itself: real tar
 * layers gzipped, a config, manifests; as OCI layouts (OCI media types) and as skopeo `dir:`
 * images (docker schema 2 media types); 1, 10 and 50 layers, a 200 MiB layer, and a
 * multi-architecture index / manifest list of each format.
 *
 * For every image: `skopeo copy` into berth, `inspect` (raw bytes and parsed), `list-tags`,
 * `copy` back out into the source's format and compare every file (digest and bytes), `copy`
 * into a second repository of berth (every layer must be mounted; skopeo uploads configs again, it
 * never mounts them), `delete`. Then `skopeo sync` of a whole repository, to `dir:` and to
 * another namespace of berth. `--preserve-digests` makes skopeo fail rather than rewrite a
 * manifest, so equal digests mean equal bytes end to end.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { fileDigest, verifyBlobStore } from '../helpers/berth-process.js';
import { blobPath, buildClientImage, listFiles, MiB, type ClientImage, type ClientImageOptions } from '../helpers/client-images.js';
import { assertTool, needTool } from '../helpers/tools.js';

const run = promisify(execFile);
/** skopeo with a deadline; returns stdout. One layer at a time keeps the CPU of the shared machine moderate. */
async function skopeo(...args: string[]): Promise<string> {
  try {
    return (await run('skopeo', args, { timeout: 300_000, maxBuffer: 64 * MiB })).stdout;
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`skopeo ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}`);
  }
}
const TLS_OFF = ['--src-tls-verify=false', '--dest-tls-verify=false'];

interface Exchange {
  method: string;
  url: string;
  status: number;
}

/** records every request berth answers (method, raw URL, status) without touching the bodies */
function recordRequests(registry: TestRegistry): Exchange[] {
  const seen: Exchange[] = [];
  registry.app.server.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    res.on('finish', () => seen.push({ method: req.method ?? '', url: req.url ?? '', status: res.statusCode }));
  });
  return seen;
}

const digestParam = (url: string, name: string) => new URL(url, 'http://x').searchParams.get(name) ?? '';

/** the digests mounted into `repo` (201 to POST ?mount=) and those uploaded to it (201 to PUT ?digest=), sorted */
function blobTraffic(exchanges: Exchange[], repo: string): { mounted: string[]; uploaded: string[] } {
  const mine = exchanges.filter((r) => r.url.startsWith(`/v2/${repo}/blobs/uploads/`));
  const mounted = mine.filter((r) => r.method === 'POST' && r.url.includes('mount=') && r.status === 201).map((r) => digestParam(r.url, 'mount'));
  const uploaded = mine.filter((r) => r.method === 'PUT' && r.status === 201).map((r) => digestParam(r.url, 'digest'));
  return { mounted: [...new Set(mounted)].sort(), uploaded: uploaded.sort() };
}

/** configs of every image built in this file (skopeo uploads them again instead of mounting) */
const configDigests = new Set<string>();

const PLATFORMS = [
  { architecture: 'amd64', os: 'linux' },
  { architecture: 'arm64', os: 'linux', variant: 'v8' },
];

interface Case {
  name: string;
  options: ClientImageOptions;
  /** skopeo's switch for lists: the older `--all` and the newer `--multi-arch all` are both exercised */
  multiArch?: string[];
}

const sizes = (n: number, base: number) => Array.from({ length: n }, (_, i) => base + i * 97);

const CASES: Case[] = [
  { name: 'oci-1-layer', options: { format: 'oci', layers: [64 * 1024] } },
  { name: 'oci-10-layers', options: { format: 'oci', layers: sizes(10, 20_000) } },
  { name: 'oci-50-layers', options: { format: 'oci', layers: sizes(50, 2_000) } },
  { name: 'dir-1-layer', options: { format: 'dir', layers: [64 * 1024] } },
  { name: 'dir-10-layers', options: { format: 'dir', layers: sizes(10, 20_000) } },
  { name: 'dir-50-layers', options: { format: 'dir', layers: sizes(50, 2_000) } },
  { name: 'oci-200mib-layer', options: { format: 'oci', layers: [200 * MiB, 4096] } },
  { name: 'oci-index', options: { format: 'oci', layers: [30_000, 5_000, 1_000], platforms: PLATFORMS }, multiArch: ['--all'] },
  { name: 'dir-manifest-list', options: { format: 'dir', layers: [30_000, 5_000], platforms: PLATFORMS }, multiArch: ['--multi-arch', 'all'] },
];

/** every blob and manifest of `image`, as files, must equal those skopeo wrote to `out` (same format) */
async function assertSameImageFiles(image: ClientImage, out: string): Promise<void> {
  if (image.format === 'dir') {
    assert.deepEqual(await listFiles(out), await listFiles(image.dir), 'the pulled dir: image has exactly the source files');
  } else {
    const blobs = (await listFiles(join(out, 'blobs'))).sort();
    assert.deepEqual(blobs, (await listFiles(join(image.dir, 'blobs'))).sort(), 'the pulled OCI layout has exactly the source blobs');
    const index = JSON.parse(await readFile(join(out, 'index.json'), 'utf8')) as { manifests: { digest: string }[] };
    assert.deepEqual(index.manifests.map((m) => m.digest), [image.digest]);
  }
  for (const file of await listFiles(out)) {
    if (file === 'index.json' || file === 'oci-layout') continue;
    const [a, b] = [join(image.dir, file), join(out, file)];
    const [sa, sb] = [await stat(a), await stat(b)];
    assert.equal(sb.size, sa.size, `${file}: size`);
    if (sa.size <= MiB) assert.ok((await readFile(a)).equals(await readFile(b)), `${file}: bytes`);
    else assert.equal(await fileDigest(b), await fileDigest(a), `${file}: content`);
    const name = file.split('/').pop()!;
    if (/^[0-9a-f]{64}$/.test(name)) assert.equal(await fileDigest(b), `sha256:${name}`, `${file}: its name is its digest`);
  }
}

describe('skopeo: images built by the test, every format and size', needTool('skopeo', 'the skopeo end-to-end tests'), () => {
  let registry: TestRegistry;
  let host: string;
  let work: string;
  let requests: Exchange[];

  before(async () => {
    assertTool('skopeo', 'the skopeo end-to-end tests');
    registry = await startBerth();
    host = new URL(registry.url).host;
    requests = recordRequests(registry);
    work = await mkdtemp(join(tmpdir(), 'berth-skopeo-images-'));
  });
  after(async () => {
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  for (const c of CASES) {
    describe(c.name, () => {
      let image: ClientImage;
      const repo = `e2e/${c.name}`;
      const multi = c.multiArch ?? [];

      before(async () => {
        image = await buildClientImage(join(work, `${c.name}-src`), c.options);
        for (const m of image.manifests) configDigests.add(m.config.digest);
      });
      after(async () => {
        // the big image's files are not needed by later cases
        await rm(join(work, `${c.name}-src`), { recursive: true, force: true });
        await rm(join(work, `${c.name}-out`), { recursive: true, force: true });
      });

      it('skopeo copy into berth stores the exact manifest and every blob', async () => {
        await skopeo('copy', ...multi, '--preserve-digests', '--dest-tls-verify=false', image.ref, `docker://${host}/${repo}:v1`);
        const res = await fetch(`${registry.url}/v2/${repo}/manifests/v1`, { headers: { accept: image.mediaType } });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('content-type'), image.mediaType);
        assert.equal(res.headers.get('docker-content-digest'), image.digest);
        assert.ok(Buffer.from(await res.arrayBuffer()).equals(image.bytes), 'manifest bytes as built');
        for (const m of image.manifests) {
          const child = await fetch(`${registry.url}/v2/${repo}/manifests/${m.digest}`, { method: 'HEAD' });
          assert.equal(child.status, 200, `instance ${m.digest}`);
        }
        for (const [digest, size] of image.blobs) {
          const head = await fetch(`${registry.url}/v2/${repo}/blobs/${digest}`, { method: 'HEAD' });
          assert.equal(head.status, 200, digest);
          assert.equal(Number(head.headers.get('content-length')), size, digest);
        }
      });

      it('skopeo inspect: raw bytes, digest, layers of each platform', async () => {
        const raw = await skopeo('inspect', '--tls-verify=false', '--raw', `docker://${host}/${repo}:v1`);
        assert.ok(Buffer.from(raw).equals(image.bytes), 'inspect --raw is the pushed manifest');
        for (const m of image.manifests) {
          const arch = m.platform ? ['--override-arch', m.platform.architecture, ...(m.platform.variant ? ['--override-variant', m.platform.variant] : [])] : [];
          const inspected = JSON.parse(await skopeo(...arch, 'inspect', '--tls-verify=false', `docker://${host}/${repo}:v1`)) as { Digest: string; Layers: string[]; Architecture: string; RepoTags: string[] };
          assert.equal(inspected.Digest, image.digest);
          assert.deepEqual(inspected.Layers, m.layers.map((l) => l.digest));
          assert.equal(inspected.Architecture, m.platform?.architecture ?? 'amd64');
          assert.deepEqual(inspected.RepoTags, ['v1']);
        }
        const config = JSON.parse(await skopeo('inspect', '--tls-verify=false', '--config', '--raw', `docker://${host}/${repo}@${image.manifests[0].digest}`)) as { rootfs: { diff_ids: string[] } };
        assert.equal(config.rootfs.diff_ids.length, c.options.layers.length);
      });

      it('skopeo list-tags after tagging a second name in the same repository', async () => {
        const before = requests.length;
        await skopeo('copy', ...multi, '--preserve-digests', ...TLS_OFF, `docker://${host}/${repo}:v1`, `docker://${host}/${repo}:v2`);
        const uploads = requests.slice(before).filter((r) => r.method !== 'GET' && r.method !== 'HEAD' && r.url.includes('/blobs/uploads/'));
        assert.deepEqual(uploads, [], 'no blob is uploaded again into the same repository');
        const tags = JSON.parse(await skopeo('list-tags', '--tls-verify=false', `docker://${host}/${repo}`)) as { Repository: string; Tags: string[] };
        assert.deepEqual(tags.Tags, ['v1', 'v2']);
      });

      it('skopeo copy back out gives every file back, byte for byte', async () => {
        const out = join(work, `${c.name}-out`);
        const dest = image.format === 'oci' ? `oci:${out}:${image.tag}` : `dir:${out}`;
        await skopeo('copy', ...multi, '--preserve-digests', '--src-tls-verify=false', `docker://${host}/${repo}:v2`, dest);
        await assertSameImageFiles(image, out);
      });

      it('skopeo copy to another repository mounts every layer instead of uploading it', async () => {
        const before = requests.length;
        await skopeo('copy', ...multi, '--preserve-digests', ...TLS_OFF, `docker://${host}/${repo}:v1`, `docker://${host}/${repo}-copy:v1`);
        const { mounted, uploaded } = blobTraffic(requests.slice(before), `${repo}-copy`);
        const layers = image.manifests.flatMap((m) => m.layers.map((l) => l.digest)).sort();
        const configs = image.manifests.map((m) => m.config.digest).sort();
        assert.deepEqual(mounted, layers, 'every layer mounted');
        // skopeo (containers/image) copies a config with PutBlob, never with a mount: configs and only configs are sent again
        assert.deepEqual(uploaded, configs, 'only configs uploaded');
        const res = await fetch(`${registry.url}/v2/${repo}-copy/manifests/v1`, { method: 'HEAD' });
        assert.equal(res.headers.get('docker-content-digest'), image.digest);
      });

      it('skopeo delete removes the copy only', async () => {
        await skopeo('delete', '--tls-verify=false', `docker://${host}/${repo}-copy:v1`);
        assert.equal((await fetch(`${registry.url}/v2/${repo}-copy/manifests/${image.digest}`)).status, 404);
        assert.equal((await fetch(`${registry.url}/v2/${repo}-copy/manifests/v1`)).status, 404);
        const tags = (await (await fetch(`${registry.url}/v2/${repo}-copy/tags/list`)).json()) as { tags: string[] };
        assert.deepEqual(tags.tags, []);
        assert.equal((await fetch(`${registry.url}/v2/${repo}/manifests/v1`, { method: 'HEAD' })).status, 200, 'the source stays');
        // instances of an index are not deleted with it (as Distribution): they stay by digest
        for (const m of image.manifests) {
          if (m.digest === image.digest) continue;
          assert.equal((await fetch(`${registry.url}/v2/${repo}-copy/manifests/${m.digest}`, { method: 'HEAD' })).status, 200);
        }
      });
    });
  }

  describe('skopeo sync of a whole repository', () => {
    const repo = 'e2e/sync/app';
    const images: ClientImage[] = [];

    before(async () => {
      const specs: ClientImageOptions[] = [
        { format: 'oci', layers: [10_000, 20_000], tag: 'one' },
        { format: 'oci', layers: [5_000], tag: 'two' },
        { format: 'oci', layers: [7_000, 3_000], platforms: PLATFORMS, tag: 'three' },
      ];
      for (const spec of specs) {
        const image = await buildClientImage(join(work, `sync-src-${spec.tag}`), spec);
        for (const m of image.manifests) configDigests.add(m.config.digest);
        await skopeo('copy', '--all', '--preserve-digests', '--dest-tls-verify=false', image.ref, `docker://${host}/${repo}:${spec.tag}`);
        images.push(image);
      }
    });

    it('to dir: every tag, every file', async () => {
      const out = join(work, 'sync-out');
      await skopeo('sync', '--all', '--preserve-digests', '--src', 'docker', '--dest', 'dir', '--src-tls-verify=false', `${host}/${repo}`, out);
      for (const image of images) {
        const dir = join(out, `app:${image.tag}`);
        assert.ok((await readFile(join(dir, 'manifest.json'))).equals(image.bytes), `${image.tag}: manifest bytes`);
        for (const digest of image.blobs.keys()) {
          assert.equal(await fileDigest(join(dir, digest.slice(7))), digest);
          assert.ok((await readFile(join(dir, digest.slice(7)))).equals(await readFile(blobPath(image, digest))));
        }
        for (const m of image.manifests) {
          if (m.digest !== image.digest) assert.ok((await readFile(join(dir, `${m.digest.slice(7)}.manifest.json`))).equals(m.bytes));
        }
      }
    });

    it('to another namespace of berth: every tag, blobs mounted', async () => {
      const before = requests.length;
      await skopeo('sync', '--all', '--preserve-digests', '--src', 'docker', '--dest', 'docker', ...TLS_OFF, `${host}/${repo}`, `${host}/mirror`);
      const tags = (await (await fetch(`${registry.url}/v2/mirror/app/tags/list`)).json()) as { tags: string[] };
      assert.deepEqual(tags.tags, ['one', 'three', 'two']);
      for (const image of images) {
        const res = await fetch(`${registry.url}/v2/mirror/app/manifests/${image.tag}`);
        assert.equal(res.headers.get('docker-content-digest'), image.digest);
        assert.ok(Buffer.from(await res.arrayBuffer()).equals(image.bytes));
      }
      const { mounted, uploaded } = blobTraffic(requests.slice(before), 'mirror/app');
      const layers = images.flatMap((i) => i.manifests.flatMap((m) => m.layers.map((l) => l.digest))).sort();
      assert.deepEqual(mounted, layers, 'every layer mounted from the source repository');
      assert.deepEqual(uploaded, images.flatMap((i) => i.manifests.map((m) => m.config.digest)).sort(), 'only configs uploaded');
    });
  });

  it('leaves no upload behind and no corrupt blob in storage', async () => {
    const found = await verifyBlobStore(registry.root!);
    assert.ok(found.length > 100);
    const completed = requests.filter((r) => r.method === 'PUT' && r.url.includes('/blobs/uploads/') && r.status === 201).map((r) => digestParam(r.url, 'digest'));
    const twice = completed.filter((d, i) => completed.indexOf(d) !== i && !configDigests.has(d));
    assert.deepEqual(twice, [], 'no layer was uploaded twice over the whole run');
    const left = await readdir(join(registry.root!, 'docker/registry/v2/repositories'), { recursive: true });
    assert.deepEqual(left.filter((p) => /(^|\/)_uploads\/[^/]+$/.test(p)), [], 'no upload session left open');
  });
});
