/**
 * The bench's blob client: uploads streamed from generated content with backpressure, downloads
 * counted and dropped. Nothing is hashed on the client while measuring (the digests are computed
 * once, up front), so the client spends as little CPU as it can on this shared 2-core machine.
 */
import { request, type IncomingHttpHeaders } from 'node:http';
import type { PatternBlob } from '../../test/helpers/berth-process.js';
import { drained } from '../../test/helpers/backpressure.js';

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  /** the body when small (error bodies, JSON); empty for blob downloads */
  text: string;
  /** body bytes received */
  received: number;
  ms: number;
}

export interface SendOptions {
  headers?: Record<string, string | number>;
  body?: Iterable<Buffer>;
  /** keep at most this many body bytes as text (default 64 KiB) */
  keepText?: number;
  timeoutMs?: number;
}

/** one request on its own connection; the body is streamed with backpressure */
export function send(method: string, url: string | URL, options: SendOptions = {}): Promise<Answer> {
  const started = performance.now();
  const keep = options.keepText ?? 64 * 1024;
  return new Promise<Answer>((resolve, reject) => {
    let failed = false;
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      clearTimeout(timer);
      req.destroy();
      reject(new Error(`${method} ${url}: ${err.message}`));
    };
    const req = request(url, { method, agent: false, headers: options.headers }, (res) => {
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (keptBytes < keep) {
          kept.push(chunk);
          keptBytes += chunk.length;
        }
      });
      res.on('error', fail);
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(kept).subarray(0, keep).toString(), received, ms: performance.now() - started });
      });
    });
    const timer = setTimeout(() => fail(new Error(`no answer within ${options.timeoutMs ?? 600_000} ms`)), options.timeoutMs ?? 600_000);
    req.on('error', fail);
    void (async () => {
      for (const chunk of options.body ?? []) {
        if (failed) return;
        if (!req.write(chunk)) await drained(req);
      }
      if (!failed) req.end();
    })().catch(fail);
  });
}

function expect(answer: Answer, status: number, what: string): Answer {
  if (answer.status !== status) throw new Error(`${what}: expected ${status}, got ${answer.status}: ${answer.text.slice(0, 500)}`);
  return answer;
}

function location(base: string, answer: Answer): URL {
  const loc = answer.headers.location;
  if (!loc) throw new Error(`upload answer without Location (status ${answer.status})`);
  return new URL(loc, base);
}

async function startUpload(base: string, repo: string, query = ''): Promise<URL> {
  return location(base, expect(await send('POST', `${base}/v2/${repo}/blobs/uploads/${query}`), 202, `POST upload to ${repo}`));
}

/**
 * POST, then one PUT ?digest= carrying the whole body (the reference takes no body on POST).
 * `sha512`: completed by the sha512 digest, announced on the POST (`digest-algorithm`, OCI) or not
 */
export async function pushMonolithic(base: string, repo: string, blob: PatternBlob, sha512?: 'announced' | 'unannounced'): Promise<void> {
  const url = await startUpload(base, repo, sha512 === 'announced' ? '?digest-algorithm=sha512' : '');
  url.searchParams.set('digest', blob.digest(sha512 ? 'sha512' : 'sha256'));
  expect(
    await send('PUT', url, { headers: { 'content-type': 'application/octet-stream', 'content-length': blob.size }, body: blob.chunks() }),
    201,
    `PUT ${blob.size} bytes to ${repo}`,
  );
}

/** POST, PATCHes of `chunk` bytes with Content-Range (following each Location), then an empty PUT ?digest= */
export async function pushChunked(base: string, repo: string, blob: PatternBlob, chunk: number): Promise<void> {
  let url = await startUpload(base, repo);
  for (let start = 0; start < blob.size; start += chunk) {
    const end = Math.min(blob.size, start + chunk);
    const answer = await send('PATCH', url, {
      headers: { 'content-type': 'application/octet-stream', 'content-length': end - start, 'content-range': `${start}-${end - 1}` },
      body: blob.chunks(start, end),
    });
    url = location(base, expect(answer, 202, `PATCH ${start}-${end - 1} to ${repo}`));
  }
  url.searchParams.set('digest', blob.digest());
  expect(await send('PUT', url, { headers: { 'content-length': 0 } }), 201, `closing PUT to ${repo}`);
}

/** GET a blob (or a byte range of it), counting and dropping the bytes; returns the wall time in ms */
export async function pullBlob(base: string, repo: string, digest: string, expectedBytes: number, range?: { start: number; end: number }): Promise<number> {
  const headers: Record<string, string> = range ? { range: `bytes=${range.start}-${range.end - 1}` } : {};
  const answer = expect(await send('GET', `${base}/v2/${repo}/blobs/${digest}`, { headers, keepText: 0 }), range ? 206 : 200, `GET blob ${digest}`);
  if (answer.received !== expectedBytes) throw new Error(`GET blob ${digest}: ${answer.received} bytes, expected ${expectedBytes}`);
  return answer.ms;
}

/**
 * GET a blob from a registry that redirects (307 to a pre-signed URL of the store), then GET that
 * URL, counting and dropping the bytes; returns the wall time of both in ms
 */
export async function pullRedirected(base: string, repo: string, digest: string, expectedBytes: number): Promise<number> {
  const started = performance.now();
  const answer = expect(await send('GET', `${base}/v2/${repo}/blobs/${digest}`), 307, `GET blob ${digest} (expecting a redirect)`);
  const target = answer.headers.location;
  if (!target) throw new Error(`GET blob ${digest}: 307 without Location`);
  const data = expect(await send('GET', new URL(target, base), { keepText: 0 }), 200, `GET ${target}`);
  if (data.received !== expectedBytes) throw new Error(`GET ${target}: ${data.received} bytes, expected ${expectedBytes}`);
  return performance.now() - started;
}
