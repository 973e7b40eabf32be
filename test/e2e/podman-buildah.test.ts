/**
 * buildah and podman (Debian's) against berth, with no container runtime involved: buildah builds
 * images from scratch (from, copy, config, commit: no RUN, so no runtime) and pushes them; podman
 * pulls, pushes, assembles and pushes a multi-architecture manifest list, and searches the
 * catalog. Both run as root with the vfs storage driver in a private storage root, so nothing
 * touches /var/lib/containers and no kernel overlay support is needed.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { sha256 } from '../helpers/blobs.js';
import { assertTool, needTools } from '../helpers/tools.js';
import { ACCEPT_MANIFESTS } from '../helpers/images.js';

const execFileP = promisify(execFile);

interface Exchange {
  method: string;
  url: string;
  status: number;
}

interface Manifest {
  mediaType: string;
  config: { digest: string; size: number };
  layers: { digest: string; size: number; mediaType: string }[];
}


describe('buildah and podman against berth (no container runtime)', needTools(['buildah', 'podman'], 'the buildah/podman end-to-end tests'), () => {
  let registry: TestRegistry;
  let host: string;
  let work: string;
  let requests: Exchange[];
  let env: NodeJS.ProcessEnv;
  let storage: string[];

  const tool = async (cmd: 'buildah' | 'podman', ...args: string[]): Promise<string> => {
    const global = cmd === 'podman' ? [...storage, '--cgroup-manager', 'cgroupfs', '--events-backend', 'file'] : storage;
    try {
      return (await execFileP(cmd, [...global, ...args], { env, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 })).stdout.trim();
    } catch (err) {
      const e = err as Error & { stderr?: string };
      throw new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}`);
    }
  };
  const buildah = (...args: string[]) => tool('buildah', ...args);
  const podman = (...args: string[]) => tool('podman', ...args);

  const manifest = async (repo: string, reference: string) => {
    const res = await fetch(`${registry.url}/v2/${repo}/manifests/${reference}`, { headers: { accept: ACCEPT_MANIFESTS } });
    assert.equal(res.status, 200, `${repo}:${reference}`);
    const body = Buffer.from(await res.arrayBuffer());
    return { digest: res.headers.get('docker-content-digest')!, type: res.headers.get('content-type')!, body, json: JSON.parse(body.toString()) as Manifest & { manifests?: { digest: string; platform: { architecture: string } }[] } };
  };

  /** builds an image from scratch with one random file; returns the local name */
  const build = async (name: string, options: { arch?: string; variant?: string; size?: number } = {}): Promise<string> => {
    const file = join(work, `${name.replace(/\W/g, '_')}.bin`);
    await writeFile(file, randomBytes(options.size ?? 256 * 1024));
    const ctr = await buildah('from', 'scratch');
    try {
      await buildah('copy', ctr, file, '/payload.bin');
      await buildah('config', '--cmd', '/payload.bin', '--label', `berth.test=${name}`, ...(options.arch ? ['--arch', options.arch] : []), ...(options.variant ? ['--variant', options.variant] : []), ctr);
      await buildah('commit', '-q', ctr, `localhost/berth-e2e/${name}`);
    } finally {
      await buildah('rm', ctr);
    }
    return `localhost/berth-e2e/${name}`;
  };

  before(async () => {
    assertTool('buildah', 'the buildah/podman end-to-end tests');
    assertTool('podman', 'the buildah/podman end-to-end tests');
    registry = await startBerth();
    host = new URL(registry.url).host;
    requests = [];
    registry.app.server.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      res.on('finish', () => requests.push({ method: req.method ?? '', url: req.url ?? '', status: res.statusCode }));
    });
    work = await mkdtemp(join(tmpdir(), 'berth-podman-'));
    await mkdir(join(work, 'tmp'));
    storage = ['--storage-driver', 'vfs', '--root', join(work, 'storage'), '--runroot', join(work, 'run')];
    // big layer copies go through TMPDIR (default /var/tmp): keep them in the test's directory
    env = { ...process.env, TMPDIR: join(work, 'tmp') };
  });
  after(async () => {
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  let built: string;
  let ociDigest: string;
  let ociManifest: Manifest;

  it('buildah builds from scratch and pushes as OCI and as docker schema 2', async () => {
    built = await build('app');
    await buildah('push', '--tls-verify=false', '--format', 'oci', built, `docker://${host}/buildah/app:oci`);
    await buildah('push', '--tls-verify=false', '--format', 'v2s2', built, `docker://${host}/buildah/app:docker`);

    const oci = await manifest('buildah/app', 'oci');
    assert.equal(oci.type, 'application/vnd.oci.image.manifest.v1+json');
    assert.equal(oci.digest, sha256(oci.body));
    const docker = await manifest('buildah/app', 'docker');
    assert.equal(docker.type, 'application/vnd.docker.distribution.manifest.v2+json');
    for (const m of [oci.json, docker.json]) {
      assert.equal(m.layers.length, 1);
      for (const blob of [m.config, ...m.layers]) {
        const res = await fetch(`${registry.url}/v2/buildah/app/blobs/${blob.digest}`);
        assert.equal(res.status, 200, blob.digest);
        const bytes = Buffer.from(await res.arrayBuffer());
        assert.equal(bytes.length, blob.size);
        assert.equal(sha256(bytes), blob.digest);
      }
    }
    const config = (await (await fetch(`${registry.url}/v2/buildah/app/blobs/${oci.json.config.digest}`)).json()) as { config: { Labels: Record<string, string>; Cmd: string[] } };
    assert.equal(config.config.Labels['berth.test'], 'app');
    assert.deepEqual(config.config.Cmd, ['/payload.bin']);
    ociDigest = oci.digest;
    ociManifest = oci.json;
  });

  it('podman pulls it back: same manifest digest, image id = config digest', async () => {
    await podman('rmi', '--all', '--force');
    await podman('pull', '-q', '--tls-verify=false', `${host}/buildah/app:oci`);
    const [inspected] = JSON.parse(await podman('image', 'inspect', `${host}/buildah/app:oci`)) as { Id: string; Digest: string; RepoDigests: string[]; Labels: Record<string, string> }[];
    assert.equal(inspected.Digest, ociDigest);
    assert.equal(`sha256:${inspected.Id}`, ociManifest.config.digest);
    assert.ok(inspected.RepoDigests.includes(`${host}/buildah/app@${ociDigest}`), inspected.RepoDigests.join(' '));
    assert.equal(inspected.Labels['berth.test'], 'app');
    // and by digest
    await podman('pull', '-q', '--tls-verify=false', `${host}/buildah/app@${ociDigest}`);
  });

  it('podman push into another repository of berth: same digest, layers mounted or skipped, never re-sent', async () => {
    const before = requests.length;
    await podman('push', '--tls-verify=false', `${host}/buildah/app:oci`, `docker://${host}/podman/copy:v1`);
    const copy = await manifest('podman/copy', 'v1');
    assert.equal(copy.digest, ociDigest, 'podman pushes the pulled manifest unchanged');
    const layer = ociManifest.layers[0].digest;
    const uploaded = requests
      .slice(before)
      .filter((r) => r.method === 'PUT' && r.url.startsWith('/v2/podman/copy/blobs/uploads/') && r.status === 201)
      .map((r) => new URL(r.url, 'http://x').searchParams.get('digest'));
    assert.ok(!uploaded.includes(layer), `the layer was mounted, not uploaded again (uploads: ${uploaded.join(', ')})`);
  });

  it('podman manifest: a list of two platforms built by buildah, pushed with --all', async () => {
    const amd = await build('multi-amd64', { arch: 'amd64', size: 64 * 1024 });
    const arm = await build('multi-arm64', { arch: 'arm64', variant: 'v8', size: 64 * 1024 });
    await buildah('push', '--tls-verify=false', amd, `docker://${host}/podman/multi:amd64`);
    await buildah('push', '--tls-verify=false', arm, `docker://${host}/podman/multi:arm64`);
    const list = 'localhost/berth-e2e/multi-list';
    await podman('manifest', 'create', list);
    await podman('manifest', 'add', '--tls-verify=false', list, `docker://${host}/podman/multi:amd64`);
    await podman('manifest', 'add', '--tls-verify=false', list, `docker://${host}/podman/multi:arm64`);
    await podman('manifest', 'push', '--all', '--tls-verify=false', list, `docker://${host}/podman/multi:list`);

    const index = await manifest('podman/multi', 'list');
    assert.match(index.type, /^application\/vnd\.(oci\.image\.index\.v1|docker\.distribution\.manifest\.list\.v2)\+json$/);
    const children = index.json.manifests ?? [];
    assert.deepEqual(children.map((c) => c.platform.architecture).sort(), ['amd64', 'arm64']);
    for (const [arch, tag] of [['amd64', 'amd64'], ['arm64', 'arm64']]) {
      const child = children.find((c) => c.platform.architecture === arch)!;
      assert.equal(child.digest, (await manifest('podman/multi', tag)).digest, `${arch} instance is the pushed image`);
    }
    // a client on either platform resolves its own instance through the list
    await podman('pull', '-q', '--tls-verify=false', '--arch', 'arm64', `${host}/podman/multi:list`);
    const [armImage] = JSON.parse(await podman('image', 'inspect', `${host}/podman/multi:list`)) as { Architecture: string; Labels: Record<string, string> }[];
    assert.equal(armImage.Architecture, 'arm64');
    assert.equal(armImage.Labels['berth.test'], 'multi-arm64');
  });

  it('podman search lists the catalog and the tags', async () => {
    const names = (await podman('search', '--tls-verify=false', '--format', '{{.Name}}', `${host}/`)).split('\n').sort();
    assert.deepEqual(names, [`${host}/buildah/app`, `${host}/podman/copy`, `${host}/podman/multi`]);
    // podman 4.3 ignores --format with --list-tags: a table of NAME and TAG under a header line
    const table = (await podman('search', '--tls-verify=false', '--list-tags', `${host}/podman/multi`)).split('\n');
    const tags = table.slice(1).map((line) => line.trim().split(/\s+/).pop());
    assert.deepEqual(tags, ['amd64', 'arm64', 'list']);
  });
});
