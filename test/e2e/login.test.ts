/**
 * `login` of real clients against the built-in token issuer: a wrong password refused with a
 * message that says so, the right one stored, and the stored login then used. skopeo and podman
 * (containers/image) ask the issuer by GET with Basic credentials; docker logs in by GET with
 * `offline_token=true`, keeps the refresh token it gets, and from then on asks by POST with the
 * OAuth2 refresh_token grant. A wrong grant in a POST answers 400 invalid_grant; a wrong Basic
 * login in a GET 401 with a Basic challenge (test/http/auth-token.test.ts has the answers).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { startDockerd, type Dockerd } from '../helpers/dockerd.js';
import { writeOCILayout } from '../helpers/oci-layout.js';
import { assertTool, needTool, needTools } from '../helpers/tools.js';

const run = promisify(execFile);
const USERS = { alice: 'alice-pw' };
const ACCESS = { 'team/*': { alice: ['pull', 'push', 'delete'] } };

/** a registry whose tokens come from its own issuer; `tokenRequests` records each ask (method and status) */
async function tokenRegistry(work: string): Promise<{ registry: TestRegistry; tokenRequests: string[] }> {
  await writeHtpasswd(join(work, 'htpasswd'), USERS);
  const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  await writeFile(join(work, 'issuer.key'), key.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  const registry = await startBerth({
    auth: {
      htpasswd: { realm: 'berth-login', path: join(work, 'htpasswd') },
      token: { autoredirect: true, service: 'berth-login', issuer: { name: 'berth-login', enabled: true, signingkey: join(work, 'issuer.key') } },
      access: ACCESS,
    },
  });
  const tokenRequests: string[] = [];
  registry.app.server.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.url?.startsWith('/auth/token')) res.on('finish', () => tokenRequests.push(`${req.method} ${res.statusCode}`));
  });
  return { registry, tokenRequests };
}

/** the rejection's message (stderr included) */
async function failure(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (err) {
    const e = err as Error & { stderr?: string };
    return `${e.message}\n${e.stderr ?? ''}`;
  }
  assert.fail('the login was accepted');
}

describe('skopeo and podman log in to the built-in token issuer', needTools(['skopeo', 'podman'], 'the login end-to-end test'), () => {
  let work: string;
  let registry: TestRegistry;
  let tokenRequests: string[];
  let host: string;

  before(async () => {
    assertTool('skopeo', 'the login end-to-end test');
    assertTool('podman', 'the login end-to-end test');
    work = await mkdtemp(join(tmpdir(), 'berth-login-'));
    ({ registry, tokenRequests } = await tokenRegistry(work));
    host = new URL(registry.url).host;
  });
  after(async () => {
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('skopeo: a wrong password is refused, the right one kept and used by copy and inspect', async () => {
    const authfile = join(work, 'skopeo-auth.json');
    const skopeo = (...args: string[]) => run('skopeo', [args[0], '--authfile', authfile, ...args.slice(1)], { timeout: 120_000 });
    const refused = await failure(skopeo('login', '--tls-verify=false', '-u', 'alice', '-p', 'wrong', host));
    assert.match(refused, /invalid username(\/| or )password/i);
    assert.ok(tokenRequests.includes('GET 401'), tokenRequests.join(', '));
    assert.match((await skopeo('login', '--tls-verify=false', '-u', 'alice', '-p', USERS.alice, host)).stdout, /Login Succeeded/);
    const image = await writeOCILayout(join(work, 'layout'), { layerSizes: [1024] });
    await skopeo('copy', '--dest-tls-verify=false', `oci:${image.dir}:${image.tag}`, `docker://${host}/team/app:1.0`);
    const inspected = JSON.parse((await skopeo('inspect', '--tls-verify=false', `docker://${host}/team/app:1.0`)).stdout) as { Digest: string };
    assert.equal(inspected.Digest, image.manifestDigest);
    await skopeo('logout', host);
    assert.match(await failure(skopeo('inspect', '--tls-verify=false', `docker://${host}/team/app:1.0`)), /unauthorized|authentication required|denied/i);
  });

  it('podman: a wrong password is refused, the right one logs in', async () => {
    const authfile = join(work, 'podman-auth.json');
    await mkdir(join(work, 'tmp'), { recursive: true });
    const podman = (...args: string[]) =>
      run('podman', ['--storage-driver', 'vfs', '--root', join(work, 'storage'), '--runroot', join(work, 'run'), '--cgroup-manager', 'cgroupfs', '--events-backend', 'file', ...args], {
        timeout: 120_000,
        env: { ...process.env, TMPDIR: join(work, 'tmp') },
      });
    const refused = await failure(podman('login', '--authfile', authfile, '--tls-verify=false', '-u', 'alice', '-p', 'wrong', host));
    assert.match(refused, /invalid username(\/| or )password/i);
    assert.match((await podman('login', '--authfile', authfile, '--tls-verify=false', '-u', 'alice', '-p', USERS.alice, host)).stdout, /Login Succeeded/);
    const stored = JSON.parse(await readFile(authfile, 'utf8')) as { auths: Record<string, { auth: string }> };
    assert.equal(Buffer.from(stored.auths[host].auth, 'base64').toString(), `alice:${USERS.alice}`);
  });
});

describe('docker logs in to the built-in token issuer', needTool('dockerd', 'the docker login end-to-end test'), () => {
  let work: string;
  let registry: TestRegistry;
  let tokenRequests: string[];
  let host: string;
  let daemon: Dockerd | undefined;

  before(async () => {
    assertTool('dockerd', 'the docker login end-to-end test');
    work = await mkdtemp(join(tmpdir(), 'berth-docker-login-'));
    ({ registry, tokenRequests } = await tokenRegistry(work));
    host = new URL(registry.url).host;
    daemon = await startDockerd(work);
  });
  after(async () => {
    await daemon?.stop();
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('refuses a wrong password, keeps the refresh token of the right one, and pushes and pulls with it by POST', async () => {
    const config = join(work, 'docker-config');
    const docker = (...args: string[]) => daemon!.docker('--config', config, ...args);
    const refused = await failure(docker('login', '-u', 'alice', '-p', 'wrong', host));
    assert.match(refused, /invalid username(\/| or )password/i);
    assert.match(await docker('login', '-u', 'alice', '-p', USERS.alice, host), /Login Succeeded/);
    // docker keeps the issuer's refresh token (its "identity token"), not the password
    const stored = JSON.parse(await readFile(join(config, 'config.json'), 'utf8')) as { auths: Record<string, { auth?: string; identitytoken?: string }> };
    assert.ok(stored.auths[host].identitytoken, JSON.stringify(stored));

    const layer = join(work, 'layer.tar');
    await run('tar', ['-cf', layer, '-C', work, 'htpasswd']);
    await docker('import', layer, `${host}/team/imported:1`);
    tokenRequests.length = 0;
    await docker('push', `${host}/team/imported:1`);
    await docker('rmi', `${host}/team/imported:1`);
    await docker('pull', `${host}/team/imported:1`);
    // a POST can only be the refresh_token grant here: docker never had the password again
    assert.ok(tokenRequests.includes('POST 200'), tokenRequests.join(', '));
    assert.ok(!tokenRequests.some((r) => !r.includes(' 200')), tokenRequests.join(', '));
  });
});
