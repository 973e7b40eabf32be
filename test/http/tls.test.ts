/**
 * TLS against the real server with certificates the test makes: HTTPS over HTTP/1.1 and HTTP/2
 * (ALPN), a whole blob push and pull over HTTP/2, http.tls.minimumtls, and mutual TLS with
 * http.tls.clientcas.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect as h2connect } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { issueCert, makeCA, type CertFiles } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { randomBlob } from '../helpers/blobs.js';
import { needTool } from '../helpers/tools.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  alpn?: string | false;
}

interface ClientTLS {
  ca: string;
  cert?: string;
  key?: string;
  maxVersion?: 'TLSv1.2' | 'TLSv1.3';
  /** the client address (127.0.0.0/8) */
  localAddress?: string;
}

function https1(url: string, tls: ClientTLS, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { method, ...tls, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

function h2(origin: string, tls: ClientTLS, path: string, method = 'GET', body?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = h2connect(origin, { ...tls });
    session.on('error', reject);
    const timer = setTimeout(() => session.destroy(new Error('timeout')), 10_000);
    const stream = session.request({ ':method': method, ':path': path, ...(body ? { 'content-length': String(body.length), 'content-type': 'application/octet-stream' } : {}) });
    let headers: Record<string, string | string[] | undefined> = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (headers = h as typeof headers));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      clearTimeout(timer);
      const alpn = session.alpnProtocol;
      session.close();
      resolve({ status: Number(headers[':status']), headers, body: Buffer.concat(chunks), alpn });
    });
    stream.on('error', reject);
    stream.end(body);
  });
}

describe('TLS', needTool('openssl', 'test certificates'), () => {
  let dir: string;
  let ca: CertFiles;
  let server: CertFiles;
  let clientCA: CertFiles;
  let client: CertFiles;
  let strangerClient: CertFiles;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-tls-'));
    ca = await makeCA(dir, 'server-ca');
    server = await issueCert(dir, ca, 'server');
    clientCA = await makeCA(dir, 'client-ca');
    client = await issueCert(dir, clientCA, 'client', { use: 'client' });
    const stranger = await makeCA(dir, 'stranger-ca');
    strangerClient = await issueCert(dir, stranger, 'stranger', { use: 'client' });
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  describe('server certificate', () => {
    let registry: TestRegistry;
    before(async () => {
      registry = await startBerth({ http: { tls: { certificate: server.cert, key: server.key }, limits: { headertimeout: '1s' } } }, { driver: 'inmemory' });
    });
    after(() => registry?.stop());

    it('closes a connection that starts no TLS handshake at the header timeout (http.limits)', async () => {
      const opened = Date.now();
      const socket = netConnect(Number(new URL(registry.url).port), '127.0.0.1');
      socket.on('error', () => undefined);
      await new Promise((resolve) => socket.on('close', resolve));
      const ms = Date.now() - opened;
      assert.ok(ms >= 900 && ms < 5000, `closed ${ms} ms after opening (header timeout 1 s; Node's default handshake timeout is 120 s)`);
    });

    it('serves HTTPS over HTTP/1.1', async () => {
      assert.match(registry.url, /^https:\/\//);
      const res = await https1(`${registry.url}/v2/`, { ca: ca.certPem });
      assert.equal(res.status, 200);
      assert.equal(res.headers['registry-distribution-api-version'], 'registry/2.0');
    });

    it('negotiates HTTP/2 and pushes and pulls a blob over it', async () => {
      const res = await h2(registry.url, { ca: ca.certPem }, '/v2/');
      assert.equal(res.alpn, 'h2');
      assert.equal(res.status, 200);
      const { data, digest } = randomBlob(300_000);
      const start = await h2(registry.url, { ca: ca.certPem }, '/v2/h2/repo/blobs/uploads/', 'POST');
      assert.equal(start.status, 202, start.body.toString());
      const location = new URL(String(start.headers.location), registry.url);
      location.searchParams.append('digest', digest);
      const put = await h2(registry.url, { ca: ca.certPem }, location.pathname + location.search, 'PUT', data);
      assert.equal(put.status, 201, put.body.toString());
      const got = await h2(registry.url, { ca: ca.certPem }, `/v2/h2/repo/blobs/${digest}`);
      assert.equal(got.status, 200);
      assert.ok(got.body.equals(data));
    });

    it('answers an oversized manifest over HTTP/2 with 400 (no Connection header there)', async () => {
      const res = await h2(registry.url, { ca: ca.certPem }, '/v2/h2/repo/manifests/big', 'PUT', Buffer.alloc(5 * 1024 * 1024, 0x20));
      assert.equal(res.status, 400);
      assert.match(res.body.toString(), /MANIFEST_INVALID/);
      assert.equal((await h2(registry.url, { ca: ca.certPem }, '/v2/')).status, 200, 'the server is fine afterwards');
    });

    it('takes a page of the registry itself over HTTP/2 (:authority, no Host) as the same origin, and refuses another (issue 26)', async () => {
      const post = async (origin: string) => {
        const session = h2connect(registry.url, { ca: ca.certPem });
        try {
          const stream = session.request({ ':method': 'POST', ':path': '/v2/h2/origin/blobs/uploads/', origin });
          stream.resume();
          stream.end();
          const [headers] = (await once(stream, 'response')) as [Record<string, string>];
          return { status: Number(headers[':status']), location: headers.location };
        } finally {
          session.close();
        }
      };
      const own = await post(registry.url);
      assert.equal(own.status, 202);
      assert.ok(own.location.startsWith(`${registry.url}/v2/h2/origin/blobs/uploads/`), own.location);
      assert.equal((await post('https://evil.example')).status, 403);
    });

    it('refuses clients that do not trust the certificate', async () => {
      await assert.rejects(https1(`${registry.url}/v2/`, { ca: clientCA.certPem }), /self-signed|unable to verify|certificate/i);
    });
  });

  describe('connection limit (issue 26)', () => {
    let registry: TestRegistry;
    before(async () => {
      registry = await startBerth({ http: { tls: { certificate: server.cert, key: server.key }, limits: { connections: 2, connectionsperaddress: 2 } } }, { driver: 'inmemory' });
    });
    after(() => registry?.stop());

    it('closes the idle connection of the address holding the most for a newcomer, not the HTTP/2 one serving an upload', { timeout: 10_000 }, async () => {
      const holder = '127.0.0.2';
      const port = Number(new URL(registry.url).port);
      // a TLS connection from the holder's address
      const fromHolder = (alpn: string) => tlsConnect({ socket: netConnect({ host: '127.0.0.1', port, localAddress: holder }), ca: ca.certPem, servername: 'localhost', ALPNProtocols: [alpn] });
      const session = h2connect(registry.url, { createConnection: () => fromHolder('h2') });
      session.on('error', () => undefined);
      let idle: ReturnType<typeof tlsConnect> | undefined;
      try {
        const post = session.request({ ':method': 'POST', ':path': '/v2/lib/busy/blobs/uploads/' });
        post.resume();
        post.end();
        const [headers] = (await once(post, 'response')) as [Record<string, string>];
        assert.equal(Number(headers[':status']), 202);
        // an upload whose body is still coming: the session serves a request
        const location = new URL(headers.location, registry.url);
        const patch = session.request({ ':method': 'PATCH', ':path': location.pathname + location.search, 'content-type': 'application/octet-stream', 'content-length': '20000' });
        patch.write(Buffer.alloc(10_000, 1));
        const patched = once(patch, 'response');
        // the same address's second connection, handshaken and idle: the two fill the limit
        idle = fromHolder('http/1.1');
        idle.on('error', () => undefined);
        await once(idle, 'secureConnect');
        const idleClosed = new Promise((resolve) => idle!.on('close', resolve));
        const newcomer = await https1(`${registry.url}/v2/`, { ca: ca.certPem, localAddress: '127.0.0.3' });
        assert.equal(newcomer.status, 200, 'the newcomer is served');
        await idleClosed;
        patch.end(Buffer.alloc(10_000, 1));
        const [answer] = (await patched) as [Record<string, string>];
        assert.equal(Number(answer[':status']), 202, 'the upload in flight goes on');
        assert.equal(answer.range, '0-19999');
      } finally {
        idle?.destroy();
        session.destroy();
      }
    });
  });

  describe('minimumtls', () => {
    let registry: TestRegistry;
    before(async () => {
      registry = await startBerth({ http: { tls: { certificate: server.cert, key: server.key, minimumtls: 'tls1.3' } } }, { driver: 'inmemory' });
    });
    after(() => registry?.stop());

    it('refuses TLS 1.2 when tls1.3 is the minimum', async () => {
      assert.equal((await https1(`${registry.url}/v2/`, { ca: ca.certPem })).status, 200);
      await assert.rejects(https1(`${registry.url}/v2/`, { ca: ca.certPem, maxVersion: 'TLSv1.2' }), /version|alert|handshake|protocol/i);
    });
  });

  describe('mutual TLS', () => {
    let registry: TestRegistry;
    before(async () => {
      registry = await startBerth({ http: { tls: { certificate: server.cert, key: server.key, clientcas: [clientCA.cert] } } }, { driver: 'inmemory' });
    });
    after(() => registry?.stop());

    it('serves clients with a certificate from clientcas, over HTTP/1.1 and HTTP/2', async () => {
      const tls = { ca: ca.certPem, cert: client.certPem, key: client.keyPem };
      assert.equal((await https1(`${registry.url}/v2/`, tls)).status, 200);
      assert.equal((await h2(registry.url, tls, '/v2/')).status, 200);
    });

    it('refuses clients without a certificate or with one from another CA', async () => {
      await assert.rejects(https1(`${registry.url}/v2/`, { ca: ca.certPem }));
      await assert.rejects(https1(`${registry.url}/v2/`, { ca: ca.certPem, cert: strangerClient.certPem, key: strangerClient.keyPem }));
    });
  });
});
