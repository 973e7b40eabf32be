/**
 * berth as a pull-through cache of another berth that issues bearer tokens (its built-in issuer):
 * the 401 challenge, the token request with the cache's credentials, one token for many
 * concurrent pulls, and the upstream's 429 with its Retry-After.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { errorCodes } from '../helpers/blobs.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { startRelay, type Relay } from '../helpers/relay.js';

describe('pull-through cache of a bearer-token upstream', () => {
  let dir: string;
  let upstream: TestRegistry;
  let relay: Relay;
  let mirror: TestRegistry;
  const images: Image[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-proxy-token-'));
    const root = join(dir, 'root');
    const open = await startBerth({}, { root });
    try {
      for (let i = 0; i < 4; i++) images.push(await pushImageOK(open.url, `team/app${i}`, buildImage('oci-manifest'), 'v1'));
    } finally {
      await open.stop();
    }
    await writeFile(join(dir, 'issuer.key'), generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
    await writeHtpasswd(join(dir, 'htpasswd'), { mirror: 'mirror-pw' });
    upstream = await startBerth(
      {
        auth: {
          htpasswd: { realm: 'issuer', path: join(dir, 'htpasswd') },
          // the realm is the address the request came to: the relay
          token: { autoredirect: true, service: 'upstream', issuer: { name: 'upstream', enabled: true, signingkey: join(dir, 'issuer.key') } },
          access: { 'team/*': { mirror: ['pull'] } },
        },
      },
      { root },
    );
    relay = await startRelay(upstream.url);
    mirror = await startBerth({ proxy: { remoteurl: relay.url, username: 'mirror', password: 'mirror-pw' } });
  });
  after(async () => {
    await mirror?.stop();
    await relay?.close();
    await upstream?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('answers the challenge with one token request for many concurrent pulls of a repository', async () => {
    const image = images[0];
    const pulls = await Promise.all(
      Array.from({ length: 8 }, () => fetch(`${mirror.url}/v2/team/app0/manifests/v1`).then(async (res) => ({ status: res.status, body: Buffer.from(await res.arrayBuffer()) }))),
    );
    for (const pull of pulls) {
      assert.equal(pull.status, 200);
      assert.deepEqual(pull.body, image.body);
    }
    for (const blob of image.blobs) {
      const res = await fetch(`${mirror.url}/v2/team/app0/blobs/${blob.digest}`);
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), blob.data);
    }
    const tokenRequests = relay.requests.filter((r) => r.startsWith('GET /auth/token'));
    assert.equal(tokenRequests.length, 1, tokenRequests.join('\n'));
    assert.match(tokenRequests[0], /scope=repository%3Ateam%2Fapp0%3Apull/);
  });

  it('asks for a token per repository before the request once the upstream is known to want tokens', async () => {
    const before = relay.requests.length;
    const res = await fetch(`${mirror.url}/v2/team/app1/manifests/v1`);
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), images[1].body);
    const sent = relay.requests.slice(before);
    assert.equal(sent.filter((r) => r.startsWith('GET /auth/token')).length, 1);
    // no 401 round trip: the token came first, then the manifest's HEAD and GET
    assert.match(sent[0], /^GET \/auth\/token/);
  });

  it('refuses through the upstream what the account may not pull', async () => {
    const res = await fetch(`${mirror.url}/v2/other/app/manifests/v1`);
    assert.equal(res.status, 502);
    assert.match(await res.text(), /refused/);
  });
});

describe('pull-through cache of a rate-limited upstream', () => {
  let upstream: TestRegistry;
  let mirror: TestRegistry;
  let image: Image;

  before(async () => {
    upstream = await startBerth({ ratelimit: { rate: 0.01, burst: 3 } });
    image = buildImage('oci-manifest', { layers: 1 });
    mirror = await startBerth({ proxy: { remoteurl: upstream.url } });
  });
  after(async () => {
    await mirror?.stop();
    await upstream?.stop();
  });

  it('answers 429 TOOMANYREQUESTS with the upstream Retry-After once the upstream limits it', async () => {
    // the push spends the burst
    await pushImageOK(upstream.url, 'limited/app', image, 'v1').catch(() => undefined);
    const res = await fetch(`${mirror.url}/v2/limited/app/manifests/${image.digest}`);
    assert.equal(res.status, 429);
    assert.ok(Number(res.headers.get('retry-after')) > 0);
    assert.deepEqual(await errorCodes(res), ['TOOMANYREQUESTS']);
  });
});
