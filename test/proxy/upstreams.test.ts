/**
 * Several upstreams under repository prefixes in one berth (proxy.upstreams), beside private
 * repositories that take pushes; containerd's `ns` parameter; passwords from files, never shown;
 * a chain of mirrors.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp, type App } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { errorCodes } from '../helpers/blobs.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { startRelay, type Relay } from '../helpers/relay.js';

async function pulledWhole(url: string, name: string, reference: string, image: Image): Promise<void> {
  const manifest = await fetch(`${url}/v2/${name}/manifests/${reference}`, { headers: { accept: image.mediaType } });
  assert.equal(manifest.status, 200, `${name}:${reference}`);
  assert.deepEqual(Buffer.from(await manifest.arrayBuffer()), image.body);
  for (const blob of image.blobs) {
    const res = await fetch(`${url}/v2/${name}/blobs/${blob.digest}`);
    assert.equal(res.status, 200);
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), blob.data);
  }
}

describe('proxy.upstreams: mirrors under prefixes beside private repositories', () => {
  let dir: string;
  let plain: TestRegistry;
  let secured: TestRegistry;
  let relay: Relay;
  let mirror: App;
  let url: string;
  const logLines: string[] = [];
  const PASSWORD = 'file-secret-4711';
  let plainImage: Image;
  let securedImage: Image;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-upstreams-'));
    plain = await startBerth();
    plainImage = await pushImageOK(plain.url, 'library/alpine', buildImage('oci-manifest'), 'latest');
    await pushImageOK(plain.url, 'tools/kit', buildImage('docker-v2'), '1.0');

    // a token upstream whose mirror account's password comes from a file
    const root = join(dir, 'secured');
    const open = await startBerth({}, { root });
    securedImage = await pushImageOK(open.url, 'org/app', buildImage('oci-manifest'), 'v1');
    await open.stop();
    await writeFile(join(dir, 'issuer.key'), generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
    await writeHtpasswd(join(dir, 'htpasswd'), { mirror: PASSWORD });
    secured = await startBerth(
      {
        auth: {
          htpasswd: { realm: 'issuer', path: join(dir, 'htpasswd') },
          token: { autoredirect: true, service: 'up', issuer: { name: 'up', enabled: true, signingkey: join(dir, 'issuer.key') } },
          access: { 'org/*': { mirror: ['pull'] } },
        },
      },
      { root },
    );
    relay = await startRelay(secured.url);
    await writeFile(join(dir, 'password'), `${PASSWORD}\n`);

    const config = validateConfig(
      {
        version: '0.1',
        storage: { inmemory: {}, delete: { enabled: true } },
        http: { secret: 's', debug: { addr: '127.0.0.1:0', prometheus: { enabled: true } } },
        proxy: {
          upstreams: [
            { prefix: 'hub', remoteurl: plain.url },
            { prefix: 'mirrors/secured', remoteurl: relay.url, username: 'mirror', passwordfile: join(dir, 'password') },
          ],
        },
      },
      'test',
    );
    mirror = await createApp(config, { logger: pino({ level: 'debug' }, { write: (line: string) => logLines.push(line) }) });
    url = await mirror.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    await mirror?.close();
    await relay?.close();
    await secured?.stop();
    await plain?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('mirrors each upstream under its prefix, by tag and by digest', async () => {
    await pulledWhole(url, 'hub/library/alpine', 'latest', plainImage);
    await pulledWhole(url, 'hub/library/alpine', plainImage.digest, plainImage);
    await pulledWhole(url, 'mirrors/secured/org/app', 'v1', securedImage);
    const tags = await (await fetch(`${url}/v2/hub/tools/kit/tags/list`)).json();
    assert.deepEqual(tags, { name: 'hub/tools/kit', tags: ['1.0'] });
  });

  it('a private repository outside the prefixes takes pushes; writes under a prefix answer 405 UNSUPPORTED', async () => {
    const own = await pushImageOK(url, 'company/service', buildImage('oci-manifest'), 'v2');
    await pulledWhole(url, 'company/service', 'v2', own);
    const refused = await fetch(`${url}/v2/hub/library/alpine/blobs/uploads/`, { method: 'POST' });
    assert.equal(refused.status, 405);
    assert.deepEqual(await errorCodes(refused.clone()), ['UNSUPPORTED']);
    assert.match(await refused.text(), /hub\/ is a pull-through cache of 127\.0\.0\.1:\d+/);
    const del = await fetch(`${url}/v2/hub/library/alpine/manifests/${plainImage.digest}`, { method: 'DELETE' });
    assert.equal(del.status, 405);
    const catalog = (await (await fetch(`${url}/v2/_catalog`)).json()) as { repositories: string[] };
    assert.ok(catalog.repositories.includes('company/service'));
    assert.ok(catalog.repositories.includes('hub/library/alpine'));
  });

  it("containerd's ns parameter routes to the mirror of that host; an unknown host is the registry's own", async () => {
    const host = new URL(plain.url).host;
    const res = await fetch(`${url}/v2/library/alpine/manifests/latest?ns=${host}`, { headers: { accept: plainImage.mediaType } });
    assert.equal(res.status, 200);
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), plainImage.body);
    const blob = await fetch(`${url}/v2/library/alpine/blobs/${plainImage.blobs[0].digest}?ns=${host}`);
    assert.deepEqual(Buffer.from(await blob.arrayBuffer()), plainImage.blobs[0].data);
    const unknownHost = await fetch(`${url}/v2/company/service/manifests/v2?ns=quay.io`);
    assert.equal(unknownHost.status, 200, 'served from the registry itself');
  });

  it('counts hits, misses and bytes fetched in /debug/vars and Prometheus', async () => {
    const vars = async () => ((await (await fetch(`${mirror.debugURL}/debug/vars`)).json()) as { proxy: Record<string, number> }).proxy;
    const before = await vars();
    const image = await pushImageOK(plain.url, 'count/me', buildImage('oci-manifest', { layers: 1 }), 'v1');
    await pulledWhole(url, 'hub/count/me', image.digest, image); // fetched
    await pulledWhole(url, 'hub/count/me', image.digest, image); // cached
    const after = await vars();
    assert.equal(after.manifestMisses - before.manifestMisses, 1);
    assert.equal(after.manifestHits - before.manifestHits, 1);
    assert.equal(after.manifestBytesFetched - before.manifestBytesFetched, image.body.length);
    assert.equal(after.blobMisses - before.blobMisses, image.blobs.length);
    assert.equal(after.blobHits - before.blobHits, image.blobs.length);
    assert.equal(after.blobBytesFetched - before.blobBytesFetched, image.blobs.reduce((n, b) => n + b.size, 0));
    const metrics = await (await fetch(`${mirror.debugURL}/metrics`)).text();
    assert.match(metrics, new RegExp(`^berth_proxy_blob_hits ${after.blobHits}$`, 'm'));
    assert.match(metrics, /^berth_proxy_manifest_bytes_fetched \d+$/m);
  });

  it('reads the password from its file (a token upstream accepted it) and shows it nowhere', async () => {
    assert.ok(relay.requests.some((r) => r.startsWith('GET /auth/token')), 'a token was asked for');
    assert.ok(!logLines.join('\n').includes(PASSWORD), 'not in the log');
    const bad = await fetch(`${url}/v2/mirrors/secured/other/repo/manifests/v1`);
    assert.ok(!(await bad.text()).includes(PASSWORD), 'not in an error body');
  });
});

describe('proxy configuration', () => {
  const base = { version: '0.1', storage: { inmemory: {} } };
  const problems = (proxy: unknown) => {
    try {
      validateConfig({ ...base, proxy }, 't');
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };

  it('refuses overlapping prefixes, both remoteurl and upstreams, bad prefixes, half credentials', () => {
    assert.match(problems({ upstreams: [{ prefix: 'a', remoteurl: 'http://x' }, { prefix: 'a/b', remoteurl: 'http://y' }] }), /prefix a\/b overlaps a/);
    assert.match(problems({ remoteurl: 'http://x', upstreams: [{ prefix: 'a', remoteurl: 'http://y' }] }), /not both or neither/);
    assert.match(problems({ upstreams: [{ prefix: 'Bad/', remoteurl: 'http://y' }] }), /expected repository-name components/);
    assert.match(problems({ upstreams: [{ prefix: 'a', remoteurl: 'http://y', username: 'u' }] }), /set username with password \(or passwordfile\)/);
    assert.match(problems({ remoteurl: 'http://x', password: 'p', passwordfile: '/f', username: 'u' }), /set password or passwordfile, not both/);
    assert.equal(problems({ upstreams: [{ prefix: 'hub', remoteurl: 'https://registry-1.docker.io' }, { prefix: 'ghcr', remoteurl: 'https://ghcr.io', username: 'u', passwordfile: '/run/secrets/ghcr' }] }), '');
  });

  it('berth config check masks passwords; a missing passwordfile stops start-up naming the key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-proxy-conf-'));
    try {
      const config = validateConfig({ ...base, http: { secret: 's' }, proxy: { remoteurl: 'http://127.0.0.1:9', username: 'u', passwordfile: join(dir, 'missing') } }, 't');
      await assert.rejects(createApp(config, { logger: pino({ level: 'silent' }) }), /proxy\.passwordfile: cannot read .*missing: ENOENT/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a chain of mirrors: berth mirroring berth mirroring a registry', () => {
  let bottom: TestRegistry;
  let middle: TestRegistry;
  let top: TestRegistry;
  let image: Image;

  before(async () => {
    bottom = await startBerth();
    image = await pushImageOK(bottom.url, 'team/app', buildImage('oci-manifest', { layers: 3 }), 'v1');
    middle = await startBerth({ proxy: { remoteurl: bottom.url } });
    top = await startBerth({ proxy: { upstreams: [{ prefix: 'up', remoteurl: middle.url }] } });
  });
  after(async () => {
    await top?.stop();
    await middle?.stop();
    await bottom?.stop();
  });

  it('a HEAD-first client (HEAD manifest and blobs, then GET) pulls byte for byte through two caches', async () => {
    const head = await fetch(`${top.url}/v2/up/team/app/manifests/v1`, { method: 'HEAD', headers: { accept: image.mediaType } });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('docker-content-digest'), image.digest);
    for (const blob of image.blobs) {
      const res = await fetch(`${top.url}/v2/up/team/app/blobs/${blob.digest}`, { method: 'HEAD' });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-length'), String(blob.size));
    }
    await pulledWhole(top.url, 'up/team/app', 'v1', image);
    await pulledWhole(top.url, 'up/team/app', image.digest, image);
    // both caches now hold it: the bottom may go away
    await bottom.stop();
    await pulledWhole(middle.url, 'team/app', image.digest, image);
  });
});
