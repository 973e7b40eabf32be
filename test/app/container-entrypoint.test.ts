/**
 * The container image's entrypoint (contrib/container/entrypoint.sh) and health check
 * (contrib/container/healthcheck.mjs), run on this machine: Distribution's entrypoint rules
 * (distribution-library-image: a configuration path as the command means serve; serve,
 * garbage-collect, help and flags go to the registry; anything else runs as it is), the two
 * places a configuration is looked for, and a health check that follows the configured address
 * and TLS. Building the image needs the network (base image, npm), which this machine lacks.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { startBerth } from '../helpers/berth.js';
import { issueCert, makeCA } from '../helpers/auth.js';

const run = promisify(execFile);
const ROOT = resolve('.');
const ENTRYPOINT = join(ROOT, 'contrib/container/entrypoint.sh');

/** runs the entrypoint with `berth` on PATH being `fakeBerth`'s directory; the exit code and output */
async function entrypoint(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('/bin/sh', [ENTRYPOINT, ...args], { env, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const { code, stdout, stderr } = err as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

describe('container entrypoint: what runs', () => {
  let dir: string;
  let env: Record<string, string>;
  const distribution = () => join(dir, 'etc-distribution.yml');
  const docker = () => join(dir, 'etc-docker-registry.yml');
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-entrypoint-'));
    // a `berth` that says how it was called
    await writeFile(join(dir, 'berth'), '#!/bin/sh\necho "berth $* | config=${REGISTRY_CONFIGURATION_PATH:-none}"\n');
    await chmod(join(dir, 'berth'), 0o755);
    env = { PATH: `${dir}:/usr/bin:/bin`, BERTH_CONFIG_CANDIDATES: `${distribution()} ${docker()}` };
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('a configuration path as the command means serve (registry:2 and registry:3 usage)', async () => {
    assert.equal((await entrypoint(['/etc/distribution/config.yml'], env)).stdout, 'berth serve /etc/distribution/config.yml | config=none\n');
    assert.equal((await entrypoint(['/conf/registry.yaml'], env)).stdout, 'berth serve /conf/registry.yaml | config=none\n');
  });

  it("serve, garbage-collect, help and flags go to berth, with Distribution's flag forms", async () => {
    assert.equal((await entrypoint(['serve', '/c.yml'], env)).stdout, 'berth serve /c.yml | config=none\n');
    assert.equal((await entrypoint(['garbage-collect', '--delete-untagged=true', '/c.yml'], env)).stdout, 'berth garbage-collect --delete-untagged=true /c.yml | config=none\n');
    assert.equal((await entrypoint(['help'], env)).stdout, 'berth help | config=none\n');
    assert.equal((await entrypoint(['--version'], env)).stdout, 'berth --version | config=none\n');
  });

  it('anything else runs as it is', async () => {
    assert.equal((await entrypoint(['echo', 'hello'], env)).stdout, 'hello\n');
  });

  it('looks for /etc/distribution/config.yml first, then /etc/docker/registry/config.yml', async () => {
    assert.equal((await entrypoint([], env)).stdout, 'berth serve | config=none\n', 'neither: berth’s built-in default');
    await writeFile(docker(), 'version: 0.1\n');
    assert.equal((await entrypoint(['serve'], env)).stdout, `berth serve | config=${docker()}\n`);
    await writeFile(distribution(), 'version: 0.1\n');
    assert.equal((await entrypoint([], env)).stdout, `berth serve | config=${distribution()}\n`);
    assert.equal((await entrypoint(['serve'], { ...env, REGISTRY_CONFIGURATION_PATH: '/mine.yml' })).stdout, 'berth serve | config=/mine.yml\n', 'a path already given stays');
    await rm(distribution());
    await rm(docker());
  });
});

describe('container health check: follows the configured address and TLS', () => {
  let dir: string;
  let env: Record<string, string>;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-healthcheck-'));
    // the real berth CLI of this checkout
    await writeFile(join(dir, 'berth'), `#!/bin/sh\ncd ${JSON.stringify(ROOT)} && exec ${JSON.stringify(process.execPath)} --import tsx src/cli.ts "$@"\n`);
    await chmod(join(dir, 'berth'), 0o755);
    env = { PATH: `${dir}:${process.env.PATH}`, BERTH_CONFIG_CANDIDATES: join(dir, 'config.yml') };
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const configFor = (addr: string, tls = '') => writeFile(join(dir, 'config.yml'), `version: 0.1\nstorage:\n  inmemory: {}\nhttp:\n  addr: ${addr}\n${tls}`);

  it('plain HTTP on the configured port: healthy while it serves, unhealthy once stopped', async () => {
    const registry = await startBerth({}, { driver: 'inmemory' });
    const port = new URL(registry.url).port;
    try {
      await configFor(`:${port}`);
      assert.equal((await entrypoint(['healthcheck'], env)).code, 0);
      // REGISTRY_HTTP_ADDR moves the address, and the check follows it
      const moved = await entrypoint(['healthcheck'], { ...env, REGISTRY_HTTP_ADDR: '127.0.0.1:9' });
      assert.equal(moved.code, 1);
      assert.match(moved.stderr, /http:\/\/127\.0\.0\.1:9\/livez/);
    } finally {
      await registry.stop();
    }
    assert.equal((await entrypoint(['healthcheck'], env)).code, 1);
  });

  it('HTTPS when http.tls is set', async () => {
    const ca = await makeCA(dir, 'ca');
    const server = await issueCert(dir, ca, 'server');
    const registry = await startBerth({ http: { tls: { certificate: server.cert, key: server.key } } }, { driver: 'inmemory' });
    const port = new URL(registry.url).port;
    try {
      assert.match(registry.url, /^https:/);
      await configFor(`127.0.0.1:${port}`, `  tls:\n    certificate: ${server.cert}\n    key: ${server.key}\n`);
      assert.equal((await entrypoint(['healthcheck'], env)).code, 0);
      // the same port spoken to in plain HTTP would fail: the check chose HTTPS from the configuration
      await configFor(`127.0.0.1:${port}`);
      assert.equal((await entrypoint(['healthcheck'], env)).code, 1);
    } finally {
      await registry.stop();
    }
  });
});
