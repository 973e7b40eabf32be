/**
 * containerd (Debian's, the client under Kubernetes, nerdctl and docker's image store) against
 * berth: a private containerd daemon (own root, state and socket; the CRI plugin off; nothing
 * is run, layers are unpacked with the `native` snapshotter) pulls a multi-platform index and a
 * single image with `ctr`, every manifest and blob it stored is compared with what was pushed,
 * then `ctr` pushes them into other repositories of berth (containerd mounts blobs it knows the
 * source of) and the result is compared again.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { blobPath, buildClientImage, pushClientImage, type ClientImage } from '../helpers/client-images.js';
import { killPid, spawnLogged, type LoggedProcess } from '../helpers/processes.js';
import { assertTool, needTools } from '../helpers/tools.js';

const execFileP = promisify(execFile);

interface Exchange {
  method: string;
  url: string;
  status: number;
}

/** every manifest and blob of an image: digest -> bytes and whether it is a manifest */
async function contentOf(image: ClientImage): Promise<Map<string, { bytes: Buffer; manifest: boolean }>> {
  const out = new Map<string, { bytes: Buffer; manifest: boolean }>();
  out.set(image.digest, { bytes: image.bytes, manifest: true });
  for (const m of image.manifests) out.set(m.digest, { bytes: m.bytes, manifest: true });
  for (const digest of image.blobs.keys()) out.set(digest, { bytes: await readFile(blobPath(image, digest)), manifest: false });
  return out;
}

describe('containerd (ctr) against berth', needTools(['containerd', 'ctr'], 'the containerd end-to-end test'), () => {
  let registry: TestRegistry;
  let host: string;
  let work: string;
  let daemon: LoggedProcess | undefined;
  let socket: string;
  let requests: Exchange[];
  // layers must be real tar archives: containerd unpacks what it pulls
  let index: ClientImage;
  let single: ClientImage;

  const ctr = async (...args: string[]): Promise<Buffer> => {
    try {
      return (await execFileP('ctr', ['--address', socket, '--namespace', 'berth-e2e', ...args], { timeout: 120_000, maxBuffer: 64 * 1024 * 1024, encoding: 'buffer' })).stdout;
    } catch (err) {
      const e = err as Error & { stderr?: Buffer };
      throw new Error(`ctr ${args.join(' ')} failed: ${e.message}\n${e.stderr?.toString() ?? ''}\n--- containerd ---\n${daemon?.logs().slice(-4000) ?? ''}`);
    }
  };

  before(async () => {
    assertTool('containerd', 'the containerd end-to-end test');
    assertTool('ctr', 'the containerd end-to-end test');
    registry = await startBerth();
    host = new URL(registry.url).host;
    requests = [];
    registry.app.server.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      res.on('finish', () => requests.push({ method: req.method ?? '', url: req.url ?? '', status: res.statusCode }));
    });
    work = await mkdtemp(join(tmpdir(), 'berth-containerd-'));
    const platforms = [
      { architecture: 'amd64', os: 'linux' },
      { architecture: 'arm64', os: 'linux', variant: 'v8' },
    ];
    index = await buildClientImage(join(work, 'index'), { format: 'oci', layers: [100_000, 30_000], platforms });
    single = await buildClientImage(join(work, 'single'), { format: 'dir', layers: [50_000, 20_000, 5_000] });
    await pushClientImage(registry.url, 'ctr/index', index, 'v1');
    await pushClientImage(registry.url, 'ctr/single', single, 'v1');
    socket = join(work, 'containerd.sock');
    const config = join(work, 'config.toml');
    await writeFile(
      config,
      [
        'version = 2',
        `root = "${join(work, 'root')}"`,
        `state = "${join(work, 'state')}"`,
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
        '[grpc]',
        `  address = "${socket}"`,
        '[ttrpc]',
        `  address = "${socket}.ttrpc"`,
        '[debug]',
        '  address = ""',
        '',
      ].join('\n'),
    );
    daemon = await spawnLogged('containerd', ['--config', config], { label: 'containerd' });
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        await execFileP('ctr', ['--address', socket, 'version'], { timeout: 5000 });
        break;
      } catch (err) {
        if (daemon.hasExited() || Date.now() > deadline) throw new Error(`containerd did not start: ${(err as Error).message}\n${daemon.logs().slice(-4000)}`);
        await sleep(100);
      }
    }
  });
  after(async () => {
    if (daemon) await killPid(daemon, { graceMs: 5000 });
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('pulls a multi-platform index and a docker image: every manifest and blob as pushed', async () => {
    await ctr('images', 'pull', '--plain-http', '--all-platforms', '--snapshotter', 'native', `${host}/ctr/index:v1`);
    await ctr('images', 'pull', '--plain-http', '--snapshotter', 'native', `${host}/ctr/single:v1`);
    const listed = (await ctr('images', 'ls')).toString();
    assert.match(listed, new RegExp(`${host}/ctr/index:v1\\s+${index.mediaType.replace(/[.+]/g, '\\$&')}\\s+${index.digest}`));
    assert.match(listed, new RegExp(`${host}/ctr/single:v1\\s+${single.mediaType.replace(/[.+]/g, '\\$&')}\\s+${single.digest}`));
    for (const [digest, { bytes }] of [...(await contentOf(index)), ...(await contentOf(single))]) {
      const stored = await ctr('content', 'get', digest);
      assert.ok(stored.equals(bytes), `containerd holds ${digest} as pushed`);
    }
  });

  it('pushes them into other repositories: same digests, layers mounted rather than sent again', async (t) => {
    const before = requests.length;
    for (const [from, to] of [['ctr/index:v1', 'ctr/index-copy:v2'], ['ctr/single:v1', 'ctr/single-copy:v2']]) {
      await ctr('images', 'tag', `${host}/${from}`, `${host}/${to}`);
      await ctr('images', 'push', '--plain-http', `${host}/${to}`);
    }
    for (const [repo, image] of [['ctr/index-copy', index], ['ctr/single-copy', single]] as const) {
      const res = await fetch(`${registry.url}/v2/${repo}/manifests/v2`, { headers: { accept: image.mediaType } });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('docker-content-digest'), image.digest);
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(image.bytes));
      for (const [digest, { bytes, manifest }] of await contentOf(image)) {
        const res2 = await fetch(`${registry.url}/v2/${repo}/${manifest ? 'manifests' : 'blobs'}/${digest}`);
        assert.equal(res2.status, 200, `${repo} has ${digest}`);
        assert.ok(Buffer.from(await res2.arrayBuffer()).equals(bytes));
      }
    }
    const sent = requests.slice(before).filter((r) => r.method === 'PUT' && /\/blobs\/uploads\//.test(r.url) && r.status === 201);
    const mounted = requests.slice(before).filter((r) => r.method === 'POST' && r.url.includes('mount=') && r.status === 201);
    const layers = [...index.manifests, ...single.manifests].flatMap((m) => m.layers);
    const param = (r: Exchange, name: string) => new URL(r.url, 'http://x').searchParams.get(name);
    t.diagnostic(`containerd push: ${mounted.length} blobs mounted, ${sent.length} uploaded`);
    for (const layer of layers) {
      assert.ok(mounted.some((r) => param(r, 'mount') === layer.digest), `layer ${layer.digest} mounted`);
      assert.ok(!sent.some((r) => param(r, 'digest') === layer.digest), `layer ${layer.digest} not sent again`);
    }
  });
});
