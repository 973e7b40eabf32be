/**
 * A TLS upstream for the cache's own blob connections (src/proxy/blob-get.ts): token auth, a
 * redirect to another host (a CDN) and the CA the process trusts (NODE_EXTRA_CA_CERTS) all hold
 * on the connection that reads the body; a CDN whose certificate is not trusted gets nothing read
 * and nothing is cached; credentials do not follow the redirect to the other origin.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { issueCert, makeCA } from '../helpers/auth.js';
import { startBerthProcess, type BerthProcess } from '../helpers/berth-process.js';

const MiB = 1024 * 1024;

function blobFile(root: string, digest: string): string {
  const [algorithm, hex] = digest.split(':');
  return join(root, 'docker/registry/v2/blobs', algorithm, hex.slice(0, 2), hex, 'data');
}

const listen = (server: Server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

describe('pull-through cache of a TLS upstream that redirects blobs to a CDN, with token auth', () => {
  let dir: string;
  let upstream: Server;
  let untrusted: Server;
  let mirror: BerthProcess | undefined;
  const data = randomBytes(6 * MiB + 4321);
  const digest = `sha256:${createHash('sha256').update(data).digest('hex')}`;
  const other = randomBytes(2 * MiB);
  const otherDigest = `sha256:${createHash('sha256').update(other).digest('hex')}`;
  /** what the CDN path was asked with */
  const cdnAuthorization: (string | undefined)[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-tls-upstream-'));
    const ca = await makeCA(dir, 'trusted-ca');
    const cert = await issueCert(dir, ca, 'upstream');
    const otherCA = await makeCA(dir, 'other-ca');
    const otherCert = await issueCert(dir, otherCA, 'cdn');
    untrusted = createServer({ cert: otherCert.certPem, key: otherCert.keyPem }, (_req, res) => {
      res.writeHead(200, { 'content-length': other.length }).end(other);
    });
    const untrustedPort = await listen(untrusted);
    let port = 0;
    upstream = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
      const url = new URL(req.url!, 'https://upstream');
      if (url.pathname.startsWith('/cdn/')) {
        cdnAuthorization.push(req.headers.authorization);
        return void res.writeHead(200, { 'content-length': data.length }).end(req.method === 'HEAD' ? undefined : data);
      }
      if (url.pathname === '/token') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token: 'tok', expires_in: 300 }));
      if (req.headers.authorization !== 'Bearer tok') {
        return void res.writeHead(401, { 'www-authenticate': `Bearer realm="https://127.0.0.1:${port}/token",service="up"` }).end();
      }
      const [, name, , blob] = /^\/v2\/(.+)\/(blobs)\/(.+)$/.exec(url.pathname) ?? [];
      const body = name === 'lib/x' && blob === digest ? data : name === 'lib/bad' && blob === otherDigest ? other : undefined;
      if (url.pathname === '/v2/') return void res.writeHead(200).end();
      if (!body) return void res.writeHead(404).end();
      if (req.method === 'HEAD') return void res.writeHead(200, { 'content-length': body.length, 'docker-content-digest': blob }).end();
      const target = body === data ? `https://localhost:${port}/cdn/${blob}` : `https://localhost:${untrustedPort}/cdn/${blob}`;
      res.writeHead(307, { location: target }).end();
    });
    port = await listen(upstream);
    mirror = await startBerthProcess({
      config: { proxy: { remoteurl: `https://127.0.0.1:${port}`, redirecthosts: ['localhost'] } },
      env: { NODE_EXTRA_CA_CERTS: ca.cert },
    });
  });

  after(async () => {
    await mirror?.stop();
    upstream?.closeAllConnections();
    untrusted?.closeAllConnections();
    await Promise.all([upstream, untrusted].map((s) => s && new Promise((resolve) => s.close(resolve))));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('fetches a blob through the token, the redirect and the trusted CA, without sending the token to the other origin', async () => {
    const res = await fetch(`${mirror!.url}/v2/lib/x/blobs/${digest}`);
    assert.equal(res.status, 200);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(data));
    assert.ok(cdnAuthorization.length > 0 && cdnAuthorization.every((a) => a === undefined), 'no credentials to the CDN');
    assert.ok(existsSync(blobFile(mirror!.root, digest)));
  });

  it('reads nothing from a CDN whose certificate it does not trust, and caches nothing', async () => {
    const res = await fetch(`${mirror!.url}/v2/lib/bad/blobs/${otherDigest}`);
    assert.notEqual(res.status, 200);
    assert.ok(res.status >= 500, `status ${res.status}`);
    await res.arrayBuffer();
    assert.ok(!existsSync(blobFile(mirror!.root, otherDigest)));
  });
});
