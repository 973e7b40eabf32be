/**
 * Real clients push with an API token: its name as the user, its secret as the password.
 * skopeo (`--dest-creds`) and podman (`podman login`, then push) against htpasswd auth and against
 * the built-in token issuer; docker (`docker login`, then push) against both too. A token that may
 * only pull is refused the push. Tokens are created on the registry's metadata database by a
 * second ApiTokens (as `berth token create` does).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ApiTokens } from '../../src/auth/api-tokens.js';
import { ApiTokenRecords } from '../../src/metadata/api-tokens.js';
import { openDatabase, type OpenedDatabase } from '../../src/metadata/open.js';
import { systemClock } from '../../src/scheduler/clock.js';
import { writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { startDockerd, type Dockerd } from '../helpers/dockerd.js';
import { writeOCILayout } from '../helpers/oci-layout.js';
import { assertTool, needTool, needTools } from '../helpers/tools.js';

const run = promisify(execFile);

type Mode = 'htpasswd' | 'issuer';

interface TokenRegistry {
  registry: TestRegistry;
  host: string;
  tokens: ApiTokens;
  close(): Promise<void>;
}

async function tokenRegistry(work: string, mode: Mode): Promise<TokenRegistry> {
  await writeHtpasswd(join(work, 'htpasswd'), { alice: 'alice-pw' });
  const htpasswd = { realm: 'berth', path: join(work, 'htpasswd') };
  let auth: Record<string, unknown> = { htpasswd };
  if (mode === 'issuer') {
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await writeFile(join(work, 'issuer.key'), key.privateKey.export({ type: 'pkcs8', format: 'pem' }));
    auth = { htpasswd, token: { autoredirect: true, service: 'berth', issuer: { name: 'berth', enabled: true, signingkey: join(work, 'issuer.key') } } };
  }
  const registry = await startBerth({ metadata: { enabled: true }, auth });
  const db: OpenedDatabase = await openDatabase({ sqlite: { path: join(registry.root!, 'berth/metadata.sqlite') } });
  return {
    registry,
    host: new URL(registry.url).host,
    tokens: new ApiTokens(new ApiTokenRecords(db.db), systemClock),
    async close() {
      await registry.stop();
      await db.db.destroy();
    },
  };
}

async function failure(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (err) {
    const e = err as Error & { stderr?: string };
    return `${e.message}\n${e.stderr ?? ''}`;
  }
  assert.fail('accepted');
}

for (const mode of ['htpasswd', 'issuer'] as const) {
  describe(`skopeo and podman push with an API token (${mode})`, needTools(['skopeo', 'podman'], 'the API token client tests'), () => {
    let work: string;
    let target: TokenRegistry;

    before(async () => {
      assertTool('skopeo', 'the API token client tests');
      assertTool('podman', 'the API token client tests');
      // lowercase: podman names an image pulled from an OCI layout after its path
      work = join(tmpdir(), `berth-token-clients-${mode}-${randomBytes(6).toString('hex')}`);
      await mkdir(work);
      target = await tokenRegistry(work, mode);
    });
    after(async () => {
      await target?.close();
      if (work) await rm(work, { recursive: true, force: true });
    });

    it('skopeo --dest-creds NAME:SECRET copies an image in; a pull-only token is refused the push', async () => {
      const { secret } = await target.tokens.create({ name: 'skopeo-ci', repositories: ['team/*'], actions: ['pull', 'push'] });
      const image = await writeOCILayout(join(work, 'layout'), { layerSizes: [2048] });
      const skopeo = (...args: string[]) => run('skopeo', args, { timeout: 120_000 });
      await skopeo('copy', '--dest-tls-verify=false', '--dest-creds', `skopeo-ci:${secret}`, `oci:${image.dir}:${image.tag}`, `docker://${target.host}/team/skopeo:1`);
      const inspected = JSON.parse((await skopeo('inspect', '--tls-verify=false', '--creds', `skopeo-ci:${secret}`, `docker://${target.host}/team/skopeo:1`)).stdout) as { Digest: string };
      assert.equal(inspected.Digest, image.manifestDigest);

      const reader = await target.tokens.create({ name: 'skopeo-reader', repositories: ['team/*'], actions: ['pull'] });
      const refused = await failure(skopeo('copy', '--dest-tls-verify=false', '--dest-creds', `skopeo-reader:${reader.secret}`, `oci:${image.dir}:${image.tag}`, `docker://${target.host}/team/skopeo:2`));
      assert.match(refused, /denied|unauthorized|insufficient|authentication required/i);
    });

    it('podman login with the token, then podman push', async () => {
      const { secret } = await target.tokens.create({ name: 'podman-ci', repositories: ['team/**'], actions: ['pull', 'push'] });
      const authfile = join(work, 'podman-auth.json');
      await mkdir(join(work, 'tmp'), { recursive: true });
      const podman = (...args: string[]) =>
        run('podman', ['--storage-driver', 'vfs', '--root', join(work, 'storage'), '--runroot', join(work, 'run'), '--cgroup-manager', 'cgroupfs', '--events-backend', 'file', ...args], {
          timeout: 120_000,
          env: { ...process.env, TMPDIR: join(work, 'tmp') },
        });
      const wrong = await failure(podman('login', '--authfile', authfile, '--tls-verify=false', '-u', 'podman-ci', '-p', `berth_${'x'.repeat(43)}`, target.host));
      assert.match(wrong, /invalid username(\/| or )password/i);
      assert.match((await podman('login', '--authfile', authfile, '--tls-verify=false', '-u', 'podman-ci', '-p', secret, target.host)).stdout, /Login Succeeded/);
      const image = await writeOCILayout(join(work, 'podman-layout'), { layerSizes: [1024] });
      await podman('pull', '-q', `oci:${image.dir}:${image.tag}`);
      const id = (await podman('images', '-q')).stdout.trim().split('\n')[0];
      await podman('push', '--authfile', authfile, '--tls-verify=false', id, `docker://${target.host}/team/deep/podman:1`);
      const listed = await run('skopeo', ['list-tags', '--tls-verify=false', '--creds', `podman-ci:${secret}`, `docker://${target.host}/team/deep/podman`]);
      assert.deepEqual((JSON.parse(listed.stdout) as { Tags: string[] }).Tags, ['1']);
    });
  });
}

describe('docker pushes with an API token', needTool('dockerd', 'the docker API token test'), () => {
  let work: string;
  let daemon: Dockerd | undefined;
  const targets: TokenRegistry[] = [];

  before(async () => {
    assertTool('dockerd', 'the docker API token test');
    work = await mkdtemp(join(tmpdir(), 'berth-token-docker-'));
    for (const mode of ['htpasswd', 'issuer'] as const) {
      await mkdir(join(work, mode));
      targets.push(await tokenRegistry(join(work, mode), mode));
    }
    daemon = await startDockerd(work);
  });
  after(async () => {
    await daemon?.stop();
    for (const target of targets) await target.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('docker login -u NAME -p SECRET, then docker push, with htpasswd and with the built-in issuer', async () => {
    const layer = join(work, 'layer.tar');
    await run('tar', ['-cf', layer, '-C', join(work, 'htpasswd'), 'htpasswd']);
    for (const [i, target] of targets.entries()) {
      const config = join(work, `docker-config-${i}`);
      const docker = (...args: string[]) => daemon!.docker('--config', config, ...args);
      const { secret } = await target.tokens.create({ name: 'docker-ci', repositories: ['team/*'], actions: ['pull', 'push'] });
      assert.match(await failure(docker('login', '-u', 'docker-ci', '-p', `berth_${'y'.repeat(43)}`, target.host)), /invalid username(\/| or )password|401 Unauthorized/i);
      assert.match(await docker('login', '-u', 'docker-ci', '-p', secret, target.host), /Login Succeeded/);
      // no refresh token for an API token: docker keeps the secret, which revocation stops
      const stored = JSON.parse(await readFile(join(config, 'config.json'), 'utf8')) as { auths: Record<string, { auth?: string; identitytoken?: string }> };
      assert.equal(stored.auths[target.host].identitytoken, undefined);
      await docker('import', layer, `${target.host}/team/docker:1`);
      await docker('push', `${target.host}/team/docker:1`);
      const read = await target.tokens.create({ name: 'docker-check', repositories: ['team/*'], actions: ['pull'] });
      await docker('rmi', `${target.host}/team/docker:1`);
      await docker('logout', target.host);
      await docker('login', '-u', 'docker-check', '-p', read.secret, target.host);
      await docker('pull', `${target.host}/team/docker:1`);
    }
  });
});
