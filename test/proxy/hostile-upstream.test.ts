/**
 * The pull-through cache against a hostile or broken upstream (issue 26, item 2): every upstream
 * here is a small node:http server of this file on 127.0.0.0/8 that answers as the attack needs.
 * An endless manifest or tag list, a blob body longer or shorter than declared, a HEAD that
 * claims a private blob, a token realm on another host, redirects to a debug listener, pulls
 * abandoned by their clients; and the proxy's log lines, which carry no key twice.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { merge, type Overrides } from '../helpers/berth.js';
import { errorCodes, sha256 } from '../helpers/blobs.js';
import { drainedOrClosed } from '../helpers/drained.js';

const MiB = 1024 * 1024;
/** what an "endless" body of these upstreams stops at, so the code before the fixes still ends */
const ENDLESS = 256 * MiB;
/** the bytes an upstream may get out before a cache that stopped reading hangs up: the limit plus socket buffers */
const LITTLE = 32 * MiB;

interface Hostile {
  url: string;
  /** `METHOD /path` of every request */
  requests: string[];
  /** the Authorization header of every request ('' for none) */
  authorizations: string[];
  /** body bytes written so far */
  sent: number;
  handle: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
  /** responses whose connection is still open */
  openResponses(): number;
  close(): Promise<void>;
}

const servers: { close(): Promise<void> }[] = [];
after(async () => {
  for (const server of servers.reverse()) await server.close().catch(() => undefined);
});

async function startHostile(host = '127.0.0.1'): Promise<Hostile> {
  const sockets = new Set<Socket>();
  let open = 0;
  const hostile: Hostile = {
    url: '',
    requests: [],
    authorizations: [],
    sent: 0,
    handle: (_req, res) => {
      res.writeHead(404).end();
    },
    openResponses: () => open,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  const server = createServer((req, res) => {
    hostile.requests.push(`${req.method} ${req.url}`);
    hostile.authorizations.push(req.headers.authorization ?? '');
    open++;
    res.on('close', () => open--);
    void hostile.handle(req, res);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  hostile.url = `http://${host}:${(server.address() as AddressInfo).port}`;
  servers.push(hostile);
  return hostile;
}

/** writes `total` random bytes (at the pace the reader takes them); stops when the connection closes */
async function pour(hostile: Hostile, res: ServerResponse, total: number, end = true): Promise<void> {
  const chunk = randomBytes(64 * 1024);
  let left = total;
  while (left > 0 && !res.destroyed) {
    const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
    left -= piece.length;
    hostile.sent += piece.length;
    if (!res.write(piece)) await drainedOrClosed(res);
  }
  if (end && !res.destroyed) res.end();
}

interface Mirror {
  url: string;
  root: string;
  logs: string[];
}

/** berth as a pull-through cache with `proxy`, on a filesystem root of its own, logging at info into `logs` */
async function startMirror(proxy: Overrides, extra: Overrides = {}): Promise<Mirror> {
  const root = await mkdtemp(join(tmpdir(), 'berth-hostile-'));
  const base: Overrides = {
    version: '0.1',
    log: { level: 'info', accesslog: { disabled: true } },
    storage: { filesystem: { rootdirectory: root }, delete: { enabled: true } },
    http: { addr: '127.0.0.1:0', secret: 'test-secret' },
    proxy,
  };
  const logs: string[] = [];
  const app = await createApp(validateConfig(merge(base, extra), 'test'), { logger: pino({ level: 'info' }, { write: (line: string) => logs.push(line) }) });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  servers.push({
    async close() {
      await app.close();
      await rm(root, { recursive: true, force: true });
    },
  });
  return { url, root, logs };
}

function blobFile(root: string, digest: string): string {
  const hex = digest.slice('sha256:'.length);
  return join(root, 'docker/registry/v2/blobs/sha256', hex.slice(0, 2), hex, 'data');
}

/** a GET's status and whole body, or 'failed' when the transfer broke off */
async function pull(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer } | 'failed'> {
  try {
    const res = await fetch(url, { headers });
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
  } catch {
    return 'failed';
  }
}

async function until(what: string, check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function fakeDigest(): string {
  return sha256(randomBytes(32));
}

describe('a hostile upstream (issue 26, item 2)', () => {
  it('a: stops reading an endless manifest body at the 4 MiB limit', async () => {
    const upstream = await startHostile();
    upstream.handle = async (req, res) => {
      if (req.method !== 'GET' || !req.url!.includes('/manifests/')) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/vnd.oci.image.manifest.v1+json' }); // chunked, no length
      await pour(upstream, res, ENDLESS);
    };
    const mirror = await startMirror({ remoteurl: upstream.url });
    const res = await fetch(`${mirror.url}/v2/lib/app/manifests/${fakeDigest()}`);
    assert.equal(res.status, 502);
    const body = (await res.json()) as { errors: { code: string; message: string }[] };
    assert.equal(body.errors[0].code, 'UNAVAILABLE');
    assert.match(body.errors[0].message, /over the 4194304-byte limit/);
    assert.ok(upstream.sent < LITTLE, `the upstream got ${upstream.sent} bytes out`);
    await until('the upstream response is closed', () => upstream.openResponses() === 0);
  });

  it('a: stops reading an endless tag list at its limit', async () => {
    const upstream = await startHostile();
    upstream.handle = async (req, res) => {
      if (!req.url!.includes('/tags/list')) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"name":"lib/app","tags":["');
      await pour(upstream, res, ENDLESS);
    };
    const mirror = await startMirror({ remoteurl: upstream.url });
    const res = await fetch(`${mirror.url}/v2/lib/app/tags/list`);
    await res.body?.cancel();
    assert.ok(upstream.sent < LITTLE, `the upstream got ${upstream.sent} bytes out`);
  });

  /** an upstream whose HEAD declares 1,000 bytes for `digest`, and whose GET answers with `get` */
  async function declaredThousand(get: (upstream: Hostile, res: ServerResponse) => Promise<void>) {
    const upstream = await startHostile();
    upstream.handle = async (req, res) => {
      if (!req.url!.includes('/blobs/')) return void res.writeHead(404).end();
      if (req.method === 'HEAD') return void res.writeHead(200, { 'content-length': '1000' }).end();
      await get(upstream, res);
    };
    return upstream;
  }

  it('b: stops at the declared size when the upstream streams on, and never completes a body that did not verify', async () => {
    const digest = sha256(randomBytes(1000));
    const upstream = await declaredThousand(async (hostile, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }); // chunked: no length of its own
      await pour(hostile, res, ENDLESS);
    });
    const mirror = await startMirror({ remoteurl: upstream.url });
    const got = await pull(`${mirror.url}/v2/lib/app/blobs/${digest}`);
    assert.ok(got === 'failed' || got.status !== 200, `the client got a complete ${got !== 'failed' && got.body.length}-byte body with the wrong bytes`);
    assert.ok(upstream.sent < LITTLE, `the upstream got ${upstream.sent} bytes out`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(!existsSync(blobFile(mirror.root, digest)), 'nothing cached');
  });

  it('b: does not hand a client told 1,000 bytes the first 1,000 of a longer body that does not verify', async () => {
    const digest = sha256(randomBytes(1000));
    const upstream = await declaredThousand(async (hostile, res) => {
      res.writeHead(200, { 'content-length': String(3 * MiB) });
      await pour(hostile, res, 3 * MiB);
    });
    const mirror = await startMirror({ remoteurl: upstream.url });
    const got = await pull(`${mirror.url}/v2/lib/app/blobs/${digest}`);
    assert.ok(got === 'failed' || got.status !== 200, `the client got a complete ${got !== 'failed' && got.body.length}-byte body with the wrong bytes`);
  });

  it('b: aborts the transfer (no complete body) when the declared bytes do not hash to the digest', async () => {
    const digest = sha256(randomBytes(3 * MiB));
    const upstream = await startHostile();
    upstream.handle = async (req, res) => {
      res.writeHead(200, { 'content-length': String(3 * MiB) });
      if (req.method === 'HEAD') return void res.end();
      await pour(upstream, res, 3 * MiB);
    };
    const mirror = await startMirror({ remoteurl: upstream.url });
    const got = await pull(`${mirror.url}/v2/lib/app/blobs/${digest}`);
    assert.ok(got === 'failed' || got.status !== 200, 'a complete body with the wrong bytes');
  });

  it("c: does not serve a private repository's blob under a mirror prefix because the upstream's HEAD claims it", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-hostile-auth-'));
    servers.push({ close: () => rm(dir, { recursive: true, force: true }) });
    await writeHtpasswd(join(dir, 'htpasswd'), { admin: 'admin-pw' });
    const secret = randomBytes(5000);
    const digest = sha256(secret);
    const upstream = await startHostile();
    upstream.handle = (req, res) => {
      // "I have every digest, of exactly the size you would expect"
      if (req.method === 'HEAD' && req.url!.includes('/blobs/')) return void res.writeHead(200, { 'content-length': String(secret.length) }).end();
      res.writeHead(404).end();
    };
    const mirror = await startMirror(
      { upstreams: [{ prefix: 'hub', remoteurl: upstream.url }] },
      {
        auth: {
          htpasswd: { realm: 'berth', path: join(dir, 'htpasswd') },
          access: { 'private/**': { admin: ['pull', 'push'] }, 'hub/**': { anonymous: ['pull'], '*': ['pull'] } },
        },
      },
    );
    const push = await fetch(`${mirror.url}/v2/private/secret/blobs/uploads/?digest=${digest}`, {
      method: 'POST',
      body: secret,
      headers: { authorization: basic('admin', 'admin-pw'), 'content-type': 'application/octet-stream' },
    });
    assert.equal(push.status, 201);
    assert.equal((await fetch(`${mirror.url}/v2/private/secret/blobs/${digest}`)).status, 401, 'private to anonymous users');

    const head = await fetch(`${mirror.url}/v2/hub/any/blobs/${digest}`, { method: 'HEAD' });
    assert.equal(head.status, 200, 'the HEAD is the upstream\'s to answer');
    const got = await pull(`${mirror.url}/v2/hub/any/blobs/${digest}`);
    assert.ok(got === 'failed' || !got.body.equals(secret), 'the private blob was served to an anonymous user');
    const link = join(mirror.root, 'docker/registry/v2/repositories/hub/any/_layers/sha256', digest.slice(7), 'link');
    assert.ok(!existsSync(link), 'not linked into the mirror');

    // an upstream that does serve those bytes gets them linked, by a fetch
    upstream.handle = (req, res) => void res.writeHead(200, { 'content-length': String(secret.length) }).end(req.method === 'HEAD' ? undefined : secret);
    const fetched = await pull(`${mirror.url}/v2/hub/any/blobs/${digest}`);
    assert.ok(fetched !== 'failed' && fetched.status === 200 && fetched.body.equals(secret));
    assert.ok(existsSync(link), 'linked once its bytes came from the upstream');
  });

  it('d: sends no credentials to a token realm on another host, refuses it and logs that once; a configured realm host is used', async () => {
    const realm = await startHostile('127.0.0.2');
    realm.handle = (_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token: 'realm-token' }));
    const upstream = await startHostile();
    upstream.handle = (req, res) => {
      if (req.headers.authorization !== 'Bearer realm-token') {
        return void res.writeHead(401, { 'www-authenticate': `Bearer realm="${realm.url}/token",service="up"` }).end();
      }
      res.writeHead(404).end();
    };
    const credentials = { username: 'mirror', password: 'mirror-secret-pw' };
    const mirror = await startMirror({ remoteurl: upstream.url, ...credentials });
    for (const tag of ['v1', 'v2']) {
      const res = await fetch(`${mirror.url}/v2/lib/app/manifests/${tag}`);
      assert.equal(res.status, 502);
      const text = await res.text();
      assert.match(text, /127\.0\.0\.2/);
      assert.doesNotMatch(text, /mirror-secret-pw/);
    }
    assert.deepEqual(realm.requests, [], 'nothing was sent to the foreign realm');
    assert.equal(mirror.logs.filter((line) => line.includes('token realm')).length, 1, 'logged once');

    const trusting = await startMirror({ remoteurl: upstream.url, ...credentials, realmhosts: ['127.0.0.2'] });
    const res = await fetch(`${trusting.url}/v2/lib/app/manifests/v1`);
    assert.deepEqual(await errorCodes(res), ['MANIFEST_UNKNOWN']);
    assert.equal(realm.authorizations[0], basic(credentials.username, credentials.password));
  });

  it('e: follows redirects only for blob bodies and only to allowed hosts, and never relays what came back', async () => {
    const blob = randomBytes(5000);
    const digest = sha256(blob);
    const debug = await startHostile(); // stands for berth's own debug listener: another port of 127.0.0.1
    debug.handle = (_req, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end('debug-listener-secret {');
    const cdn = await startHostile();
    cdn.handle = (req, res) => void res.writeHead(200, { 'content-length': String(blob.length) }).end(req.method === 'HEAD' ? undefined : blob);
    const upstream = await startHostile();
    let blobTarget = debug.url;
    upstream.handle = (req, res) => {
      if (req.headers.authorization !== basic('mirror', 'mirror-pw')) return void res.writeHead(401, { 'www-authenticate': 'Basic realm="up"' }).end();
      if (req.url!.includes('/manifests/')) return void res.writeHead(307, { location: `${debug.url}/debug/vars` }).end();
      if (req.method === 'HEAD') return void res.writeHead(200, { 'content-length': String(blob.length) }).end();
      res.writeHead(307, { location: `${blobTarget}/cdn/${digest}` }).end();
    };
    const mirror = await startMirror({ remoteurl: upstream.url, username: 'mirror', password: 'mirror-pw', redirecthosts: [new URL(cdn.url).host] });

    const manifest = await fetch(`${mirror.url}/v2/lib/app/manifests/${fakeDigest()}`);
    assert.equal(manifest.status, 502);
    assert.doesNotMatch(await manifest.text(), /debug-listener-secret|Unexpected|JSON/);
    const refused = await pull(`${mirror.url}/v2/lib/app/blobs/${digest}`);
    assert.ok(refused === 'failed' || refused.status === 502, 'a blob redirected to a host not allowed');
    if (refused !== 'failed') assert.doesNotMatch(refused.body.toString(), /debug-listener-secret/);
    assert.deepEqual(debug.requests, [], 'the debug listener was not asked');

    blobTarget = cdn.url;
    const got = await pull(`${mirror.url}/v2/lib/app/blobs/${digest}`);
    assert.ok(got !== 'failed' && got.status === 200 && got.body.equals(blob), 'the allowed CDN serves the blob');
    assert.deepEqual(cdn.authorizations, [''], 'no credentials to the CDN');
    assert.ok(existsSync(blobFile(mirror.root, digest)));
  });

  it('f: cancels the fetches of a slow upstream once every client has left', async () => {
    const PULLS = 20;
    const upstream = await startHostile();
    upstream.handle = async (req, res) => {
      res.writeHead(200, { 'content-length': String(64 * MiB) });
      if (req.method === 'HEAD') return void res.end();
      await pour(upstream, res, 3 * MiB, false); // then nothing: the connection stays open
    };
    const mirror = await startMirror({ remoteurl: upstream.url });
    const gets = () => upstream.requests.filter((r) => r.startsWith('GET')).length;
    const leaving = new AbortController();
    const pulls = Array.from({ length: PULLS }, () => fetch(`${mirror.url}/v2/lib/app/blobs/${fakeDigest()}`, { signal: leaving.signal }).then((res) => res.body?.getReader().read()).catch(() => undefined));
    await until('every fetch started', () => gets() === PULLS && upstream.sent >= PULLS * 3 * MiB);
    leaving.abort();
    await Promise.all(pulls);
    await until('the upstream responses are closed', () => upstream.openResponses() === 0);
    const uploads = join(mirror.root, 'docker/registry/v2/repositories/lib/app/_uploads');
    await until('the uploads are gone', () => !existsSync(uploads) || readdirSync(uploads).length === 0);
  });

  it('logs no key twice in a proxy line', async () => {
    const blob = randomBytes(5000);
    const digest = sha256(blob);
    const upstream = await startHostile();
    upstream.handle = (req, res) => void res.writeHead(200, { 'content-length': String(blob.length) }).end(req.method === 'HEAD' ? undefined : blob);
    const mirror = await startMirror({ remoteurl: upstream.url });
    const got = await pull(`${mirror.url}/v2/lib/app/blobs/${digest}`);
    assert.ok(got !== 'failed' && got.body.equals(blob));
    await until('the fetch is logged', () => mirror.logs.some((line) => line.includes('fetched blob')));
    const lines = mirror.logs.filter((line) => line.includes('"component":"proxy"'));
    assert.ok(lines.length > 0);
    for (const line of lines) assert.deepEqual(repeatedKeys(line), [], line);
  });
});

/** the keys that occur more than once in one object of a JSON text (JSON.parse keeps the last silently) */
function repeatedKeys(text: string): string[] {
  const repeated: string[] = [];
  const stack: { keys: Set<string> | undefined; expectKey: boolean }[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = stack.at(-1);
      if (top?.keys && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) repeated.push(key);
        top.keys.add(key);
        top.expectKey = false;
      }
      i = j;
    } else if (c === '{') stack.push({ keys: new Set(), expectKey: true });
    else if (c === '[') stack.push({ keys: undefined, expectKey: false });
    else if (c === '}' || c === ']') stack.pop();
    else if (c === ',' && stack.at(-1)?.keys) stack.at(-1)!.expectKey = true;
  }
  return repeated;
}
