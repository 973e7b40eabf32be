/**
 * docker (Debian's docker.io: dockerd and the docker CLI) against berth. A private dockerd
 * (test/helpers/dockerd.ts) pulls and pushes; no container is ever started.
 *
 * Pull of a multi-platform OCI index (docker picks linux/amd64 and unpacks it), push into another
 * repository (layers mounted; docker 20.10 writes a docker schema 2 manifest), pull back by digest,
 * and `docker import` + push of an image whose layer docker compresses itself.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { sha256 } from '../helpers/blobs.js';
import { buildClientImage, pushClientImage, tarHeader, type ClientImage } from '../helpers/client-images.js';
import { startDockerd, type Dockerd } from '../helpers/dockerd.js';
import { assertTool, needTools } from '../helpers/tools.js';

interface Exchange {
  method: string;
  url: string;
  status: number;
}

interface Manifest {
  mediaType: string;
  config: { digest: string };
  layers: { digest: string; mediaType: string }[];
}

describe('docker (dockerd + CLI) against berth', needTools(['dockerd', 'docker'], 'the docker end-to-end test'), () => {
  let registry: TestRegistry;
  let host: string;
  let work: string;
  let daemon: Dockerd | undefined;
  let requests: Exchange[];
  let image: ClientImage;

  const docker = (...args: string[]): Promise<string> => daemon!.docker(...args);

  const manifest = async (repo: string, reference: string): Promise<{ digest: string; json: Manifest }> => {
    const res = await fetch(`${registry.url}/v2/${repo}/manifests/${reference}`, {
      headers: { accept: 'application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json' },
    });
    assert.equal(res.status, 200, `${repo}:${reference}`);
    return { digest: res.headers.get('docker-content-digest')!, json: (await res.json()) as Manifest };
  };

  before(async () => {
    assertTool('dockerd', 'the docker end-to-end test');
    registry = await startBerth();
    host = new URL(registry.url).host;
    requests = [];
    registry.app.server.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      res.on('finish', () => requests.push({ method: req.method ?? '', url: req.url ?? '', status: res.statusCode }));
    });
    work = await mkdtemp(join(tmpdir(), 'berth-docker-'));
    image = await buildClientImage(join(work, 'index'), {
      format: 'oci',
      layers: [200_000, 30_000],
      platforms: [
        { architecture: 'amd64', os: 'linux' },
        { architecture: 'arm64', os: 'linux', variant: 'v8' },
      ],
    });
    await pushClientImage(registry.url, 'docker/src', image, 'v1');

    daemon = await startDockerd(work);
  });
  after(async () => {
    await daemon?.stop();
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  const amd64 = () => image.manifests[0];

  it('pulls a multi-platform OCI index: the linux/amd64 instance, image id = its config digest', async () => {
    await docker('pull', '--quiet', `${host}/docker/src:v1`);
    const [inspected] = JSON.parse(await docker('image', 'inspect', `${host}/docker/src:v1`)) as { Id: string; RepoDigests: string[]; Architecture: string; RootFS: { Layers: string[] } }[];
    assert.equal(inspected.Id, amd64().config.digest);
    assert.deepEqual(inspected.RepoDigests, [`${host}/docker/src@${image.digest}`]);
    assert.equal(inspected.Architecture, 'amd64');
    assert.equal(inspected.RootFS.Layers.length, 2, 'both layers unpacked');
  });

  it('pushes into another repository: layers mounted, same config and layers', async () => {
    const before = requests.length;
    await docker('tag', `${host}/docker/src:v1`, `${host}/docker/copy:v1`);
    await docker('push', '--quiet', `${host}/docker/copy:v1`);
    const pushed = await manifest('docker/copy', 'v1');
    assert.equal(pushed.json.config.digest, amd64().config.digest);
    assert.deepEqual(pushed.json.layers.map((l) => l.digest), amd64().layers.map((l) => l.digest), 'the same compressed layers');
    const mine = requests.slice(before).filter((r) => r.url.startsWith('/v2/docker/copy/blobs/uploads/'));
    const mounted = mine.filter((r) => r.method === 'POST' && r.url.includes('mount=') && r.status === 201).map((r) => new URL(r.url, 'http://x').searchParams.get('mount'));
    for (const layer of amd64().layers) assert.ok(mounted.includes(layer.digest), `layer ${layer.digest} mounted`);
    const sent = mine.filter((r) => r.method === 'PUT' && r.status === 201).map((r) => new URL(r.url, 'http://x').searchParams.get('digest'));
    for (const layer of amd64().layers) assert.ok(!sent.includes(layer.digest), `layer ${layer.digest} not sent again`);

    // and back by digest, from a clean slate
    await docker('image', 'rm', `${host}/docker/src:v1`, `${host}/docker/copy:v1`);
    await docker('pull', '--quiet', `${host}/docker/copy@${pushed.digest}`);
    const [again] = JSON.parse(await docker('image', 'inspect', `${host}/docker/copy@${pushed.digest}`)) as { Id: string }[];
    assert.equal(again.Id, amd64().config.digest);
  });

  it('docker import + push: a layer docker compressed itself, served back byte for byte', async () => {
    const payload = randomBytes(300_000);
    const tar = Buffer.concat([tarHeader('imported.bin', payload.length), payload, Buffer.alloc((512 - (payload.length % 512)) % 512 + 1024)]);
    const file = join(work, 'import.tar');
    await writeFile(file, tar);
    await docker('import', '--change', 'CMD ["/imported.bin"]', file, `${host}/docker/imported:v1`);
    await docker('push', '--quiet', `${host}/docker/imported:v1`);
    const pushed = await manifest('docker/imported', 'v1');
    assert.equal(pushed.json.mediaType, 'application/vnd.docker.distribution.manifest.v2+json');
    assert.equal(pushed.json.layers.length, 1);
    const res = await fetch(`${registry.url}/v2/docker/imported/blobs/${pushed.json.layers[0].digest}`);
    const layer = Buffer.from(await res.arrayBuffer());
    assert.equal(sha256(layer), pushed.json.layers[0].digest);
    assert.ok(gunzipSync(layer).subarray(512, 512 + payload.length).equals(payload), 'the layer holds the imported file');
  });
});
