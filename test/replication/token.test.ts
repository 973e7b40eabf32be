/**
 * Replication against a remote that issues bearer tokens (a berth with its built-in issuer and
 * access rules): a push rule asks for `pull,push` tokens and its content arrives; a pull rule
 * asks for `pull` (and the catalog's scope) and copies back.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { advanceUntil, ManualClock } from '../helpers/manual-clock.js';
import { startRelay, type Relay } from '../helpers/relay.js';

const run = promisify(execFile);

describe('replication with a token-issuing remote', () => {
  let dir: string;
  let remote: TestRegistry;
  let relay: Relay;
  let source: TestRegistry;
  const clock = new ManualClock();
  const image = buildImage('oci-manifest');

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-replication-token-'));
    await writeFile(join(dir, 'issuer.key'), generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
    await writeHtpasswd(join(dir, 'htpasswd'), { bot: 'bot-pw' });
    remote = await startBerth({
      auth: {
        htpasswd: { realm: 'issuer', path: join(dir, 'htpasswd') },
        token: { autoredirect: true, service: 'remote', issuer: { name: 'remote', enabled: true, signingkey: join(dir, 'issuer.key') } },
        access: { 'team/*': { bot: ['pull', 'push'] } },
      },
    });
    relay = await startRelay(remote.url);
    source = await startBerth({ replication: [{ name: 'out', push: { url: relay.url, username: 'bot', password: 'bot-pw' }, repositories: ['team/*'] }] }, { clock });
  });
  after(async () => {
    await source?.stop();
    await relay?.close();
    await remote?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a push rule pushes with pull,push tokens', async () => {
    await pushImageOK(source.url, 'team/app', image, 'v1');
    await advanceUntil(clock, 'the image is on the remote', async () => relay.count(/^PUT \/v2\/team\/app\/manifests\/v1/) > 0, { step: 1000 });
    const tokens = relay.requests.filter((line) => line.startsWith('GET /auth/token'));
    assert.ok(tokens.length > 0);
    assert.ok(tokens.every((line) => decodeURIComponent(line).includes('scope=repository:team/app:pull,push')), tokens.join('\n'));
    const manifestPuts = relay.requests.filter((line) => /^PUT \/v2\/team\/app\/manifests\/v1/.test(line));
    assert.equal(manifestPuts.length, 1);
  });

  it('a pull rule copies back with pull tokens', async () => {
    const root = join(dir, 'back');
    const config = join(dir, 'back.yml');
    await writeFile(config, stringify({ version: '0.1', log: { level: 'error' }, storage: { filesystem: { rootdirectory: root } }, replication: [{ name: 'back', pull: { url: relay.url, username: 'bot', password: 'bot-pw' }, repositories: ['team/app'] }] }));
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'replicate', 'run', 'back', config], { cwd: process.cwd() });
    const summary = JSON.parse(stdout);
    assert.equal(summary.failed, 0, stdout);
    assert.equal(summary.images, 1);
    const back = await startBerth({}, { root });
    try {
      const res = await fetch(`${back.url}/v2/team/app/manifests/v1`, { headers: { accept: image.mediaType } });
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), image.body);
    } finally {
      await back.stop();
    }
  });
});
