// The reference registry (Debian bookworm `docker-registry`, CNCF Distribution 2.8.2+ds1) as a
// test fixture: start it, push a blob, check Distribution's on-disk layout, stop it.
//
// It also pins down how the reference answers the edge cases berth has to decide on, so a
// change of the Debian package shows up here. Observed with docker-registry 2.8.2+ds1
// (go1.19.8), filesystem driver, delete disabled unless noted. Every response also carries
// `Docker-Distribution-Api-Version: registry/2.0`. "text 404" means the router matched no
// route: `404`, `Content-Type: text/plain; charset=utf-8`, `X-Content-Type-Options: nosniff`,
// body `404 page not found` (no JSON error body).
//
// | request                                               | status | code / body                                   | notable headers |
// |-------------------------------------------------------|--------|-----------------------------------------------|-----------------|
// | GET /v2/                                              | 200    | `{}`                                          | Content-Type: application/json; charset=utf-8 |
// | POST /v2/<name>/ (any method on /v2/)                  | 200    | `{}`                                          | |
// | GET /v2 (no slash)                                    | 301    | html                                          | Location: /v2/ |
// | GET /v2/UPPER/blobs/<dgst> (invalid name)             | 404    | text 404 (route regex does not match)         | same for a..b, POST uploads, manifests |
// | GET /v2/<name>/blobs/sha256:xyz (bad hex)             | 400    | DIGEST_INVALID "provided digest did not match uploaded content", detail {} | |
// | GET /v2/<name>/blobs/md5:<32 hex> (unknown algorithm) | 400    | DIGEST_INVALID, detail {}                     | |
// | GET /v2/<name>/blobs/notadigest (no colon)            | 404    | text 404                                      | |
// | GET /v2/<name>/blobs/sha256:<unknown>                 | 404    | BLOB_UNKNOWN "blob unknown to registry", detail "<digest>" | |
// | HEAD blob (known)                                     | 200    | -                                             | Content-Length, Docker-Content-Digest, ETag "<digest>", Accept-Ranges: bytes, Cache-Control: max-age=31536000, Connection: close |
// | POST /v2/<name>/blobs/<dgst> (wrong method)           | 405    | text `Method not allowed`                     | Allow: DELETE, GET, HEAD |
// | POST .../blobs/uploads/?digest=<d> with body          | 202    | monolithic POST NOT supported: body ignored, new session | Location (absolute), Range: 0-0, Docker-Upload-UUID |
// | POST .../blobs/uploads/?mount=<d>&from=<repo>         | 201    | -                                             | Location .../blobs/<d>, Docker-Content-Digest |
// | upload Location                                       |        | absolute `http://<Host header>/v2/<name>/blobs/uploads/<uuid>?_state=<b64url HMAC+JSON>`; honours X-Forwarded-Proto | |
// | GET upload (valid _state)                             | 204    | -                                             | Range: 0-<n-1> (0-0 when empty), Location, Docker-Upload-UUID, no Content-Length |
// | GET upload, unknown uuid (no _state)                  | 404    | BLOB_UPLOAD_INVALID "blob upload invalid", detail {} | (not BLOB_UPLOAD_UNKNOWN!) |
// | GET upload, known uuid, _state missing                | 404    | BLOB_UPLOAD_INVALID, detail {}                | |
// | GET/PATCH upload, _state with one byte of HMAC changed | 404   | BLOB_UPLOAD_INVALID, detail {}                | |
// | GET upload, _state=garbage (not base64)               | 404    | BLOB_UPLOAD_INVALID, detail 7                 | |
// | PATCH, _state payload edited (Offset), HMAC kept      | 404    | BLOB_UPLOAD_INVALID, detail 184               | |
// | GET upload, valid _state used under another repo name | 404    | BLOB_UPLOAD_INVALID (no detail)               | |
// | PATCH with stale _state (offset != stored size)       | 404    | BLOB_UPLOAD_INVALID (no detail)               | |
// | PATCH Content-Range 10-14 at offset 5 (out of order)  | 202    | Content-Range IGNORED: data appended at 5     | Range: 0-9 |
// | PATCH Content-Range 5-9 / 9-0 / `bytes 0-4/5` / 0-2 with 5 bytes, at offset 0 | 202 | Content-Range ignored | Range: 0-4 |
// | PATCH Content-Type: text/plain                        | 500    | UNKNOWN "unknown error", detail {}            | |
// | PUT upload without ?digest=                           | 400    | DIGEST_INVALID, detail "digest missing"       | |
// | PUT upload ?digest=sha256:xyz                         | 400    | DIGEST_INVALID, detail "digest parsing failed" | |
// | PUT upload ?digest=<wrong but well-formed>            | 400    | DIGEST_INVALID, detail {"Digest":"<d>","Reason":{}} | |
// | PUT upload ?digest=<right> (+ body)                   | 201    | -                                             | Location (absolute) .../blobs/<d>, Docker-Content-Digest, Content-Length: 0 |
// | DELETE upload                                         | 204    | -                                             | Docker-Upload-UUID |
// | DELETE upload, unknown uuid                           | 404    | BLOB_UPLOAD_INVALID, detail {}                | |
// | GET blob Range: bytes=0-0                             | 206    | 1 byte                                        | Content-Range: bytes 0-0/17, Content-Length: 1, Accept-Ranges: bytes |
// | GET blob Range: bytes=3- / bytes=-3 / bytes=0-100     | 206    | ranges clamped to the size                    | Content-Range: bytes 3-16/17 / 14-16/17 / 0-16/17 |
// | GET blob Range: bytes=0-1,3-4                         | 206    | multipart/byteranges                          | |
// | GET blob Range: bytes=5-2                             | 416    | text `invalid range` -- BROKEN: Content-Length: 17 (blob size) for a 14-byte body, connection closed | no Content-Range |
// | GET blob Range: bytes=1000- (past end)                | 416    | empty body -- BROKEN: Content-Length: 17, connection closed | Content-Range: bytes */17 |
// | GET blob Range: items=0-1                             | 416    | like bytes=5-2                                | |
// | DELETE blob, delete disabled                          | 405    | UNSUPPORTED "The operation is unsupported."   | |
// | DELETE blob, delete enabled                           | 202    | -, Content-Length: 0                          | then GET -> 404 BLOB_UNKNOWN; repeat DELETE -> 404 BLOB_UNKNOWN (no detail) |
// | DELETE blob sha256:xyz, delete enabled                | 400    | DIGEST_INVALID, detail {}                     | |
// | GET /v2/foo/bar, GET /v2/foo/bar/baz, GET /v3/        | 404    | text 404                                      | |
//
// All 416 responses of Distribution 2.8.2 carry the blob's Content-Length with a shorter body;
// Node's fetch fails with "terminated" on them, so this file reads them with node:http.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { assertTool, needTool, toolAvailable, ToolMissingError } from '../helpers/tools.js';
import { freePort, BAD_PORTS } from '../helpers/ports.js';
import { pidAlive, spawnLogged, killPid, waitForHttp } from '../helpers/processes.js';

const REPO = 'berth-test/reference';
const BLOB = Buffer.from('hello berth blob\n'); // 17 bytes
const HEX = createHash('sha256').update(BLOB).digest('hex');
const DIGEST = `sha256:${HEX}`;

interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The connection ended before Content-Length bytes arrived. */
  truncated: boolean;
}

/** A request through node:http, tolerant of responses whose body is shorter than announced. */
function raw(url: string, method = 'GET', headers: Record<string, string> = {}, body?: Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let settled = false;
      const done = (truncated: boolean) => {
        if (settled) return;
        settled = true;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), truncated });
      };
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done(!res.complete));
      res.on('aborted', () => done(true));
      res.on('error', () => done(true));
      res.on('close', () => done(!res.complete));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function errorCode(r: RawResponse): string | undefined {
  try {
    return (JSON.parse(r.body.toString('utf8')) as { errors: { code: string }[] }).errors[0]?.code;
  } catch {
    return undefined;
  }
}

/** POST + PUT ?digest= (Distribution 2.8 has no monolithic POST). Returns the PUT response. */
async function pushBlob(base: string, repo: string, data: Buffer<ArrayBuffer>, digest: string): Promise<Response> {
  const start = await fetch(`${base}/v2/${repo}/blobs/uploads/`, { method: 'POST' });
  assert.equal(start.status, 202);
  const location = start.headers.get('location');
  assert.ok(location, 'POST /blobs/uploads/ returns a Location');
  const put = new URL(location, base);
  put.searchParams.set('digest', digest);
  return fetch(put, {
    method: 'PUT',
    body: data,
    headers: { 'content-type': 'application/octet-stream' },
  });
}

describe('reference registry (Debian docker-registry)', needTool('docker-registry', 'the reference registry tests'), () => {
  let ref: ReferenceRegistry | undefined;
  const reg = (): ReferenceRegistry => {
    assert.ok(ref, 'reference registry started');
    return ref;
  };

  before(async () => {
    assertTool('docker-registry', 'the reference registry tests'); // fails clearly in CI when not installed
    ref = await startReferenceRegistry({});
  });
  after(async () => {
    await ref?.stop();
  });

  it('answers GET /v2/ with 200 and the API version header', async () => {
    const res = await fetch(`${reg().url}/v2/`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('docker-distribution-api-version'), 'registry/2.0');
    assert.deepEqual(await res.json(), {});
  });

  it('does not support monolithic POST ?digest=: it opens a session and ignores the body', async () => {
    const res = await fetch(`${reg().url}/v2/${REPO}-mono/blobs/uploads/?digest=${DIGEST}`, {
      method: 'POST',
      body: BLOB,
      headers: { 'content-type': 'application/octet-stream' },
    });
    assert.equal(res.status, 202);
    assert.equal(res.headers.get('range'), '0-0');
    assert.ok(res.headers.get('docker-upload-uuid'));
    const get = await fetch(`${reg().url}/v2/${REPO}-mono/blobs/${DIGEST}`);
    assert.equal(get.status, 404);
  });

  it('stores a pushed blob in Distribution layout', async () => {
    const put = await pushBlob(reg().url, REPO, BLOB, DIGEST);
    assert.equal(put.status, 201, await put.text());
    assert.equal(put.headers.get('docker-content-digest'), DIGEST);
    assert.equal(new URL(put.headers.get('location')!).pathname, `/v2/${REPO}/blobs/${DIGEST}`);

    const v2 = join(reg().rootdirectory, 'docker', 'registry', 'v2');
    const data = await readFile(join(v2, 'blobs', 'sha256', HEX.slice(0, 2), HEX, 'data'));
    assert.deepEqual(data, BLOB);
    const link = await readFile(join(v2, 'repositories', REPO, '_layers', 'sha256', HEX, 'link'), 'utf8');
    assert.equal(link, DIGEST);

    const get = await fetch(`${reg().url}/v2/${REPO}/blobs/${DIGEST}`);
    assert.equal(get.status, 200);
    assert.equal(get.headers.get('docker-content-digest'), DIGEST);
    assert.deepEqual(Buffer.from(await get.arrayBuffer()), BLOB);
  });

  it('answers the edge cases as recorded at the top of this file', async () => {
    const base = reg().url;
    const blobUrl = `${base}/v2/${REPO}/blobs/${DIGEST}`;

    let r = await raw(`${base}/v2/UPPER/blobs/${DIGEST}`);
    assert.equal(r.status, 404);
    assert.match(String(r.headers['content-type']), /^text\/plain/);
    assert.equal(r.body.toString(), '404 page not found\n');

    r = await raw(`${base}/v2/${REPO}/blobs/sha256:xyz`);
    assert.equal(r.status, 400);
    assert.equal(errorCode(r), 'DIGEST_INVALID');

    r = await raw(`${base}/v2/foo/bar`);
    assert.equal(r.status, 404);
    assert.equal(r.body.toString(), '404 page not found\n');

    r = await raw(blobUrl, 'DELETE');
    assert.equal(r.status, 405);
    assert.equal(errorCode(r), 'UNSUPPORTED');

    r = await raw(blobUrl, 'GET', { range: 'bytes=0-0' });
    assert.equal(r.status, 206);
    assert.equal(r.headers['content-range'], 'bytes 0-0/17');
    assert.deepEqual(r.body, BLOB.subarray(0, 1));

    r = await raw(blobUrl, 'GET', { range: 'bytes=5-2' });
    assert.equal(r.status, 416);
    assert.equal(r.headers['content-range'], undefined);

    r = await raw(blobUrl, 'GET', { range: 'bytes=1000-' });
    assert.equal(r.status, 416);
    assert.equal(r.headers['content-range'], 'bytes */17');

    r = await raw(`${base}/v2/${REPO}/blobs/uploads/00000000-0000-0000-0000-000000000000`);
    assert.equal(r.status, 404);
    assert.equal(errorCode(r), 'BLOB_UPLOAD_INVALID');

    // An upload session: PATCH ignores Content-Range, tampered _state is rejected, PUT needs a digest.
    const start = await raw(`${base}/v2/${REPO}/blobs/uploads/`, 'POST');
    assert.equal(start.status, 202);
    const first = String(start.headers.location);
    r = await raw(first, 'PATCH', { 'content-type': 'application/octet-stream', 'content-range': '0-4' }, BLOB.subarray(0, 5));
    assert.equal(r.status, 202);
    assert.equal(r.headers.range, '0-4');
    const at5 = String(r.headers.location);
    r = await raw(at5, 'PATCH', { 'content-type': 'application/octet-stream', 'content-range': '10-14' }, BLOB.subarray(10, 15));
    assert.equal(r.status, 202, 'Distribution 2.8 does not check Content-Range');
    assert.equal(r.headers.range, '0-9');
    const at10 = String(r.headers.location);

    const tampered = new URL(at10);
    tampered.searchParams.set('_state', 'A' + tampered.searchParams.get('_state')!.slice(1));
    r = await raw(tampered.toString());
    assert.equal(r.status, 404);
    assert.equal(errorCode(r), 'BLOB_UPLOAD_INVALID');

    r = await raw(at10);
    assert.equal(r.status, 204);
    assert.equal(r.headers.range, '0-9');

    r = await raw(at10, 'PUT');
    assert.equal(r.status, 400);
    assert.equal(errorCode(r), 'DIGEST_INVALID');
    assert.match(r.body.toString(), /digest missing/);

    r = await raw(at10, 'DELETE');
    assert.equal(r.status, 204);
  });

  it('stop() ends the process', async () => {
    const { pid } = reg();
    assert.ok(pidAlive(pid));
    await reg().stop();
    assert.equal(pidAlive(pid), false, `pid ${pid} is gone`);
    await reg().stop(); // idempotent
  });

  it('serves an existing root and deletes blobs when delete is enabled', async () => {
    const second = await startReferenceRegistry({
      rootdirectory: reg().rootdirectory,
      deleteEnabled: true,
      config: { log: { level: 'warn' } },
    });
    try {
      assert.notEqual(second.port, reg().port);
      const v2 = join(second.rootdirectory, 'docker', 'registry', 'v2');
      const blobUrl = `${second.url}/v2/${REPO}/blobs/${DIGEST}`;
      const get = await fetch(blobUrl);
      assert.equal(get.status, 200);
      assert.deepEqual(Buffer.from(await get.arrayBuffer()), BLOB);

      const del = await fetch(blobUrl, { method: 'DELETE' });
      assert.equal(del.status, 202);
      assert.equal((await fetch(blobUrl)).status, 404);
      // Distribution deletes the repository's link; the data stays until garbage collection.
      await assert.rejects(stat(join(v2, 'repositories', REPO, '_layers', 'sha256', HEX, 'link')), { code: 'ENOENT' });
      assert.ok((await stat(join(v2, 'blobs', 'sha256', HEX.slice(0, 2), HEX, 'data'))).isFile());
    } finally {
      await second.stop();
    }
    assert.equal(pidAlive(second.pid), false);
  });
});

describe('test helpers', () => {
  it('needTool skips locally and runs (to fail) in CI when a tool is missing', (t) => {
    const missing = 'berth-no-such-tool-xyz';
    assert.equal(toolAvailable(missing), false);
    assert.equal(toolAvailable('node') || toolAvailable(process.execPath), true);
    const saved = { CI: process.env.CI, REQ: process.env.BERTH_REQUIRE_TOOLS };
    t.after(() => {
      for (const [k, v] of [['CI', saved.CI], ['BERTH_REQUIRE_TOOLS', saved.REQ]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    });
    delete process.env.BERTH_REQUIRE_TOOLS;
    process.env.CI = 'true';
    assert.deepEqual(needTool(missing, 'a self-test'), { skip: false });
    assert.throws(() => assertTool(missing, 'a self-test'), (e: unknown) =>
      e instanceof ToolMissingError && /apt-get install -y berth-no-such-tool-xyz/.test(e.message) && /\.ci\/run/.test(e.message));
    delete process.env.CI;
    const opts = needTool(missing, 'a self-test');
    assert.equal(typeof opts.skip, 'string');
    assert.match(String(opts.skip), /berth-no-such-tool-xyz not found/);
  });

  it('freePort never returns a fetch-blocked port', async () => {
    assert.ok(BAD_PORTS.has(6000) && BAD_PORTS.has(10080) && BAD_PORTS.has(6666));
    for (let i = 0; i < 20; i++) {
      const p = await freePort();
      assert.ok(p > 0 && p < 65536 && !BAD_PORTS.has(p));
    }
  });

  it('waitForHttp reports an early exit with the output; killPid stops a stubborn process', async () => {
    const crash = await spawnLogged(process.execPath, ['-e', 'console.error("boom on stderr"); process.exit(3)']);
    await assert.rejects(
      waitForHttp(`http://127.0.0.1:${await freePort()}/`, { process: crash, timeoutMs: 5000, name: 'crasher' }),
      /crasher exited \(code 3[\s\S]*boom on stderr/,
    );
    const stubborn = await spawnLogged(process.execPath, [
      '-e',
      'process.on("SIGTERM", () => {}); console.log("ready"); setInterval(() => {}, 1000)',
    ]);
    while (!stubborn.logs().includes('ready')) await new Promise((r) => setTimeout(r, 20));
    const t0 = Date.now();
    await killPid(stubborn, { graceMs: 300 });
    assert.ok(stubborn.hasExited());
    assert.equal((await stubborn.exited).signal, 'SIGKILL');
    assert.ok(Date.now() - t0 >= 250);
    assert.equal(pidAlive(stubborn.pid), false);
  });
});
