/**
 * Real clients pulling through berth as their mirror: containerd with a hosts.toml mirror (it
 * sends `?ns=<host>`, which routes to the upstream mirrored for that host), podman with a
 * `[[registry.mirror]]` entry pointing at a mirror prefix, and dockerd with `--registry-mirror`
 * (docker mirrors only Docker Hub: the mirror, a berth with Distribution's single `remoteurl`,
 * answers for docker.io's `library/` images from a local upstream, and nothing reaches the
 * internet). Each pulls a multi-platform index and
 * a 20-layer image; the bytes are compared with the upstream's, and the mirror's request log
 * shows the pulls went through it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { blobPath, buildClientImage, pushClientImage, type ClientImage } from '../helpers/client-images.js';
import { killPid, spawnLogged, type LoggedProcess } from '../helpers/processes.js';
import { startDockerd } from '../helpers/dockerd.js';
import { assertTool, needTools } from '../helpers/tools.js';

const execFileP = promisify(execFile);
const PLATFORMS = [
  { architecture: 'amd64', os: 'linux' },
  { architecture: 'arm64', os: 'linux', variant: 'v8' },
];
const TWENTY_LAYERS = Array.from({ length: 20 }, (_, i) => 4_000 + i * 500);

describe('clients pulling through berth as a mirror', needTools(['containerd', 'ctr', 'podman', 'dockerd'], 'the mirror client tests'), () => {
  let work: string;
  let upstream: TestRegistry;
  let mirror: TestRegistry;
  let upstreamHost: string;
  let mirrorHost: string;
  const seen: string[] = [];
  let index: ClientImage;
  let layered: ClientImage;

  before(async () => {
    for (const tool of ['containerd', 'ctr', 'podman', 'dockerd']) assertTool(tool, 'the mirror client tests');
    work = await mkdtemp(join(tmpdir(), 'berth-mirror-clients-'));
    upstream = await startBerth();
    upstreamHost = new URL(upstream.url).host;
    index = await buildClientImage(join(work, 'index'), { format: 'oci', layers: [60_000, 20_000], platforms: PLATFORMS });
    layered = await buildClientImage(join(work, 'layered'), { format: 'dir', layers: TWENTY_LAYERS });
    await pushClientImage(upstream.url, 'clients/index', index, 'v1');
    await pushClientImage(upstream.url, 'clients/layered', layered, 'v1');
    // what docker asks a Docker Hub mirror for: docker.io/NAME is library/NAME
    await pushClientImage(upstream.url, 'library/berth-index', index, 'v1');
    await pushClientImage(upstream.url, 'library/berth-layered', layered, 'v1');
    mirror = await startBerth({ proxy: { upstreams: [{ prefix: 'up', remoteurl: upstream.url }] } });
    mirrorHost = new URL(mirror.url).host;
    mirror.app.server.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      res.on('finish', () => seen.push(`${req.method} ${req.url} ${res.statusCode}`));
    });
  });
  after(async () => {
    await mirror?.stop();
    await upstream?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** every manifest and blob of the image, as the upstream holds them */
  const contentOf = async (image: ClientImage) => {
    const out = new Map<string, Buffer>([[image.digest, image.bytes]]);
    for (const m of image.manifests) out.set(m.digest, m.bytes);
    for (const digest of image.blobs.keys()) out.set(digest, await readFile(blobPath(image, digest)));
    return out;
  };

  it('containerd with a hosts.toml mirror: the ns parameter routes to the upstream of that host; every byte as upstream', async () => {
    const dir = join(work, 'containerd');
    const hosts = join(dir, 'hosts', upstreamHost);
    await mkdir(hosts, { recursive: true });
    await writeFile(join(hosts, 'hosts.toml'), [`server = "http://${upstreamHost}"`, '', `[host."http://${mirrorHost}"]`, '  capabilities = ["pull", "resolve"]', ''].join('\n'));
    const socket = join(dir, 'containerd.sock');
    await writeFile(
      join(dir, 'config.toml'),
      ['version = 2', `root = "${join(dir, 'root')}"`, `state = "${join(dir, 'state')}"`, 'disabled_plugins = ["io.containerd.grpc.v1.cri"]', '[grpc]', `  address = "${socket}"`, '[ttrpc]', `  address = "${socket}.ttrpc"`, ''].join('\n'),
    );
    let daemon: LoggedProcess | undefined;
    const ctr = async (...args: string[]) => {
      try {
        return (await execFileP('ctr', ['--address', socket, '--namespace', 'berth-mirror', ...args], { timeout: 120_000, maxBuffer: 64 << 20, encoding: 'buffer' })).stdout;
      } catch (err) {
        throw new Error(`ctr ${args.join(' ')}: ${(err as Error).message}\n${(err as { stderr?: Buffer }).stderr?.toString() ?? ''}\n${daemon?.logs().slice(-3000) ?? ''}`);
      }
    };
    try {
      daemon = await spawnLogged('containerd', ['--config', join(dir, 'config.toml')], { label: 'containerd' });
      const deadline = Date.now() + 30_000;
      while (await execFileP('ctr', ['--address', socket, 'version'], { timeout: 5000 }).then(() => false, () => true)) {
        if (daemon.hasExited() || Date.now() > deadline) throw new Error(`containerd did not start\n${daemon.logs().slice(-3000)}`);
        await sleep(100);
      }
      for (const name of ['clients/index', 'clients/layered']) {
        await ctr('images', 'pull', '--hosts-dir', join(dir, 'hosts'), '--all-platforms', '--snapshotter', 'native', `${upstreamHost}/${name}:v1`);
      }
      for (const image of [index, layered]) {
        for (const [digest, bytes] of await contentOf(image)) assert.ok((await ctr('content', 'get', digest)).equals(bytes), `containerd holds ${digest} as upstream`);
      }
      const viaNs = seen.filter((line) => line.includes(`ns=${encodeURIComponent(upstreamHost)}`) && line.startsWith('GET /v2/clients/layered/blobs/'));
      assert.equal(viaNs.length, layered.blobs.size, `every blob of the 20-layer image came through the mirror:\n${seen.join("\n")}`);
      assert.ok(viaNs.every((line) => line.endsWith(' 200')));
      // ns named the upstream's host: the mirror stored it under that upstream's prefix
      const catalog = (await (await fetch(`${mirror.url}/v2/_catalog`)).json()) as { repositories: string[] };
      assert.ok(catalog.repositories.includes('up/clients/layered'), JSON.stringify(catalog));
    } finally {
      if (daemon) await killPid(daemon, { graceMs: 5000 });
    }
  });

  it('podman with a [[registry.mirror]] at a mirror prefix: pulls the index and the 20-layer image through it', async () => {
    const dir = join(work, 'podman');
    await mkdir(join(dir, 'tmp'), { recursive: true });
    const conf = join(dir, 'registries.conf');
    await writeFile(
      conf,
      ['[[registry]]', `location = "${upstreamHost}"`, 'insecure = true', '', '[[registry.mirror]]', `location = "${mirrorHost}/up"`, 'insecure = true', ''].join('\n'),
    );
    const env = { ...process.env, CONTAINERS_REGISTRIES_CONF: conf, TMPDIR: join(dir, 'tmp') };
    const storage = ['--storage-driver', 'vfs', '--root', join(dir, 'storage'), '--runroot', join(dir, 'run'), '--cgroup-manager', 'cgroupfs', '--events-backend', 'file'];
    const podman = async (...args: string[]) => {
      try {
        return (await execFileP('podman', [...storage, ...args], { env, timeout: 180_000, maxBuffer: 16 << 20 })).stdout.trim();
      } catch (err) {
        throw new Error(`podman ${args.join(' ')}: ${(err as Error).message}\n${(err as { stderr?: string }).stderr ?? ''}`);
      }
    };
    const before = seen.length;
    await podman('pull', '--arch', 'arm64', '--variant', 'v8', `${upstreamHost}/clients/index:v1`);
    await podman('pull', `${upstreamHost}/clients/layered:v1`);
    const armManifest = index.manifests.find((m) => m.platform?.architecture === 'arm64')!;
    assert.equal(await podman('image', 'inspect', '--format', '{{.Digest}}', `${upstreamHost}/clients/layered:v1`), layered.digest);
    const through = seen.slice(before);
    assert.ok(through.includes(`GET /v2/up/clients/index/manifests/${armManifest.digest} 200`), through.join('\n'));
    for (const blob of [armManifest.config, ...armManifest.layers]) assert.ok(through.includes(`GET /v2/up/clients/index/blobs/${blob.digest} 200`), blob.digest);
    const layers = through.filter((line) => line.startsWith('GET /v2/up/clients/layered/blobs/') && line.endsWith(' 200'));
    assert.equal(layers.length, layered.blobs.size, `every blob of the 20-layer image through the mirror:\n${through.join('\n')}`);
  });

  it('dockerd with --registry-mirror: pulls the index and the 20-layer image of "Docker Hub" through a remoteurl mirror', async () => {
    const hub = await startBerth({ proxy: { remoteurl: upstream.url } });
    const hubSeen: string[] = [];
    hub.app.server.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      res.on('finish', () => hubSeen.push(`${req.method} ${req.url} ${res.statusCode}`));
    });
    const dir = join(work, 'dockerd');
    await mkdir(dir, { recursive: true });
    const daemon = await startDockerd(dir, ['--registry-mirror', hub.url]);
    try {
      await daemon.docker('pull', '--quiet', 'berth-index:v1');
      await daemon.docker('pull', '--quiet', 'berth-layered:v1');
      const inspect = async (ref: string) => JSON.parse(await daemon.docker('image', 'inspect', ref))[0] as { Id: string; RepoDigests: string[]; RootFS: { Layers: string[] } };
      const amd64 = index.manifests.find((m) => m.platform?.architecture === 'amd64')!;
      const pulledIndex = await inspect('berth-index:v1');
      assert.equal(pulledIndex.Id, amd64.config.digest);
      assert.deepEqual(pulledIndex.RepoDigests, [`berth-index@${index.digest}`]);
      const pulledLayered = await inspect('berth-layered:v1');
      assert.equal(pulledLayered.RootFS.Layers.length, 20, 'every layer unpacked');
      assert.deepEqual(pulledLayered.RepoDigests, [`berth-layered@${layered.digest}`]);
      const layers = hubSeen.filter((line) => line.startsWith('GET /v2/library/berth-layered/blobs/') && line.endsWith(' 200'));
      assert.equal(layers.length, layered.blobs.size, `every blob of the 20-layer image through the mirror:\n${hubSeen.join('\n')}`);
      for (const [digest, bytes] of await contentOf(layered)) {
        const kind = digest === layered.digest ? 'manifests' : 'blobs';
        const res = await fetch(`${hub.url}/v2/library/berth-layered/${kind}/${digest}`);
        assert.ok(Buffer.from(await res.arrayBuffer()).equals(bytes), `the mirror holds ${digest} as upstream`);
      }
    } finally {
      await daemon.stop();
      await hub.stop();
    }
  });
});
