/**
 * HTTP-level property tests (issue 18) against an in-process berth: random methods, paths,
 * queries, headers (Range, Content-Range, Content-Type, Authorization) and bodies, manifest PUTs
 * and chunked uploads. Whatever arrives, the answer is never a 5xx, and an error answer's body is
 * the registry's error JSON (spec 2.8) with a code of its vocabulary, not the web framework's.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { ERROR_MESSAGES } from '../../src/registry/errors.js';
import { isDigest } from '../../src/registry/digest.js';
import { isTag } from '../../src/registry/names.js';
import { params } from './fuzz.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** a request sent as given: the path is not normalised, the body is sent with its length */
function send(base: string, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Answer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method, path, headers: body ? { ...headers, 'content-length': String(body.length) } : headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** the property every answer must hold: no 5xx, and an error body that is the registry's own */
function checkAnswer(answer: Answer, what: string): void {
  assert.ok(answer.status < 500, `${what}: ${answer.status} ${answer.body.toString().slice(0, 300)}`);
  if (answer.status < 400 || answer.body.length === 0) return;
  assert.match(String(answer.headers['content-type']), /^application\/json/, `${what}: ${answer.status} with ${answer.headers['content-type']}`);
  const doc = JSON.parse(answer.body.toString()) as { errors?: { code: string; message: string }[] };
  assert.ok(Array.isArray(doc.errors) && doc.errors.length > 0, `${what}: ${answer.status} body ${answer.body.toString().slice(0, 300)}`);
  for (const e of doc.errors) {
    assert.ok(Object.hasOwn(ERROR_MESSAGES, e.code), `${what}: unknown error code ${e.code}`);
    assert.equal(typeof e.message, 'string');
  }
}

/** printable header text (what a client library lets through; control characters never reach the server) */
const headerText = fc.string({ unit: fc.constantFrom(...'abcXYZ019 -_=,;:/*+.()"\'', 'bytes=', 'application/', '\u00e9'), maxLength: 40 });
/** path pieces: percent-encoded or not, dot segments, names and digests */
const segment = fc.oneof(
  fc.constantFrom('v2', 'fuzz', 'app', 'fuzz/app', 'manifests', 'blobs', 'uploads', 'tags', 'list', 'referrers', '_catalog', 'latest', '.', '..', '%2e%2e', '%2F', '%00', '', 'sha256:', 'A', '-'),
  // no '%' here: malformed escapes have a property of their own at the end
  fc.stringMatching(/^[a-z0-9._:-]{1,20}$/),
);
const HEX64 = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 });

describe('HTTP properties against an in-process berth', () => {
  let berth: TestRegistry;
  let secured: TestRegistry;
  let dir: string;
  let image: Image;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-fuzz-http-'));
    await writeHtpasswd(join(dir, 'htpasswd'), { alice: 'secret' });
    berth = await startBerth({ compatibility: { schema1: { enabled: true } } });
    secured = await startBerth({ auth: { htpasswd: { realm: 'fuzz', path: join(dir, 'htpasswd') }, access: { 'fuzz/**': { alice: ['pull', 'push'] } } } });
    image = await pushImageOK(berth.url, 'fuzz/app', buildImage('oci-manifest'), 'latest');
  });

  after(async () => {
    agent.destroy();
    await berth?.stop();
    await secured?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('any method, path, query and headers: never a 5xx, errors in the registry JSON', async () => {
    const path = fc.oneof(
      fc.array(segment, { minLength: 1, maxLength: 6 }).map((parts) => `/v2/${parts.join('/')}`),
      fc.tuple(fc.constantFrom('/v2/fuzz/app/manifests/', '/v2/fuzz/app/blobs/', '/v2/fuzz/app/referrers/', '/v2/fuzz/app/blobs/uploads/'), fc.oneof(segment, HEX64.map((h) => `sha256:${h}`))).map(([a, b]) => a + b),
    );
    const query = fc.oneof(fc.constant(''), fc.tuple(fc.constantFrom('n', 'last', 'digest', 'mount', 'from', '_state', 'artifactType'), fc.stringMatching(/^[a-zA-Z0-9%:._-]{0,12}$/)).map(([k, v]) => `?${k}=${v}`));
    const headers = fc.dictionary(fc.constantFrom('range', 'content-range', 'content-type', 'accept', 'authorization', 'if-none-match'), headerText, { maxKeys: 3 });
    const method = fc.constantFrom('GET', 'HEAD', 'PUT', 'PATCH', 'POST', 'DELETE', 'OPTIONS');
    await fc.assert(
      fc.asyncProperty(method, path, query, headers, fc.option(fc.uint8Array({ maxLength: 64 }), { nil: undefined }), fc.boolean(), async (m, p, q, h, body, onSecured) => {
        const target = onSecured ? secured : berth;
        const withBody = body !== undefined && m !== 'GET' && m !== 'HEAD';
        checkAnswer(await send(target.url, m, p + q, h, withBody ? Buffer.from(body) : undefined), `${m} ${p}${q} ${JSON.stringify(h)}`);
      }),
      params(400),
    );
  });

  test('manifest references: a tag or digest answers 200 or MANIFEST_UNKNOWN, anything else TAG_INVALID or DIGEST_INVALID', async () => {
    const reference = fc.oneof(
      fc.constantFrom('latest', image.digest, image.digest.toUpperCase(), `${image.digest}0`, 'sha512:abc', 'md5:00', ':', 'a:b', '-x', '_x', 'x'.repeat(129)),
      fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/),
      fc.stringMatching(/^[A-Za-z0-9._:+=-]{1,140}$/),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).map(encodeURIComponent),
    );
    await fc.assert(
      fc.asyncProperty(reference, fc.constantFrom('GET', 'HEAD'), async (ref, method) => {
        const answer = await send(berth.url, method, `/v2/fuzz/app/manifests/${ref}`, {});
        checkAnswer(answer, `${method} manifests/${ref}`);
        const valid = ref.includes(':') ? isDigest(ref) : isTag(ref);
        if (valid) {
          assert.ok(answer.status === 200 || answer.status === 404, `${ref}: ${answer.status}`);
          if (answer.status === 404 && method === 'GET') assert.match(answer.body.toString(), /MANIFEST_UNKNOWN/);
        } else {
          assert.equal(answer.status, 400, `${ref}: ${answer.status}`);
          if (method === 'GET') assert.match(answer.body.toString(), ref.includes(':') ? /DIGEST_INVALID/ : /TAG_INVALID/);
        }
      }),
      params(120),
    );
  });

  test('blob reads with any Range: 200, 206 inside the blob, or 416 RANGE_INVALID', async () => {
    const layer = image.blobs[image.blobs.length - 1];
    const range = fc.oneof(headerText, fc.tuple(fc.nat({ max: 5000 }), fc.nat({ max: 5000 })).map(([a, b]) => `bytes=${a}-${b}`), fc.nat({ max: 5000 }).map((n) => `bytes=-${n}`));
    await fc.assert(
      fc.asyncProperty(range, async (value) => {
        const answer = await send(berth.url, 'GET', `/v2/fuzz/app/blobs/${layer.digest}`, { range: value });
        checkAnswer(answer, `Range ${value}`);
        assert.ok([200, 206, 416].includes(answer.status), `Range ${value}: ${answer.status}`);
        if (answer.status === 206) {
          const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(answer.headers['content-range']));
          assert.ok(m, String(answer.headers['content-range']));
          assert.ok(answer.body.equals(layer.data.subarray(Number(m[1]), Number(m[2]) + 1)));
        }
      }),
      params(150),
    );
  });

  test('manifest PUTs of mutated documents: 201 or a 4xx manifest error', async () => {
    const doc = JSON.parse(image.body.toString()) as Record<string, unknown>;
    const value = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom('sha256:', `sha256:${'0'.repeat(64)}`, -1, 2 ** 60));
    const field = fc.constantFrom('schemaVersion', 'mediaType', 'config', 'layers', 'subject', 'manifests', 'annotations', 'artifactType');
    const contentType = fc.constantFrom(undefined, 'application/vnd.oci.image.manifest.v1+json', 'application/vnd.oci.image.index.v1+json', 'application/vnd.docker.distribution.manifest.v1+prettyjws', 'application/json', 'text/plain', '');
    const reference = fc.oneof(fc.constantFrom('latest', 'v1', 'sha256:abc'), fc.stringMatching(/^[A-Za-z0-9_.:-]{1,20}$/));
    await fc.assert(
      fc.asyncProperty(fc.dictionary(field, value, { maxKeys: 3 }), contentType, reference, async (changes, type, ref) => {
        const body = Buffer.from(JSON.stringify({ ...doc, ...changes }));
        const answer = await send(berth.url, 'PUT', `/v2/fuzz/app/manifests/${ref}`, type === undefined ? {} : { 'content-type': type }, body);
        checkAnswer(answer, `PUT ${ref} ${type} ${body.toString().slice(0, 200)}`);
      }),
      params(200),
    );
  });

  test('chunked uploads with any Content-Range, length and digest: never a 5xx', async () => {
    const chunk = fc.uint8Array({ maxLength: 32 });
    const contentRange = fc.option(fc.oneof(headerText, fc.tuple(fc.nat({ max: 40 }), fc.nat({ max: 40 })).map(([a, b]) => `${a}-${b}`)), { nil: undefined });
    const digest = fc.oneof(fc.constant('right'), HEX64.map((h) => `sha256:${h}`), headerText);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(chunk, contentRange), { minLength: 1, maxLength: 3 }), digest, async (chunks, finalDigest) => {
        const start = await send(berth.url, 'POST', '/v2/fuzz/app/blobs/uploads/', {});
        assert.equal(start.status, 202);
        let location = new URL(String(start.headers.location), berth.url);
        for (const [bytes, range] of chunks) {
          const answer = await send(berth.url, 'PATCH', location.pathname + location.search, { 'content-type': 'application/octet-stream', ...(range === undefined ? {} : { 'content-range': range }) }, Buffer.from(bytes));
          checkAnswer(answer, `PATCH Content-Range ${range} with ${bytes.length} bytes`);
          if (answer.headers.location) location = new URL(String(answer.headers.location), berth.url);
        }
        const all = Buffer.concat(chunks.map(([b]) => Buffer.from(b)));
        const d = finalDigest === 'right' ? `sha256:${(await import('node:crypto')).createHash('sha256').update(all).digest('hex')}` : finalDigest;
        const sep = location.search === '' ? '?' : '&';
        const done = await send(berth.url, 'PUT', `${location.pathname}${location.search}${sep}digest=${encodeURIComponent(d)}`, {});
        checkAnswer(done, `PUT digest ${d}`);
      }),
      params(100),
    );
  });

  // Fastify refuses a malformed percent escape in the path (`/v2/%_`) before any hook runs; its
  // `frameworkErrors` hands such a request to the registry's raw-path matcher (src/http/server.ts)
  test('a malformed percent escape in the path is answered with the registry error JSON', async () => {
    const escape = fc.tuple(fc.stringMatching(/^[a-z0-9]{0,6}$/), fc.constantFrom('%', '%_', '%zz', '%4', '%%41')).map(([a, b]) => `/v2/${a}${b}/tags/list`);
    await fc.assert(
      fc.asyncProperty(escape, async (p) => {
        checkAnswer(await send(berth.url, 'GET', p, {}), `GET ${p}`);
      }),
      params(20),
    );
  });

  test('Basic credentials of any shape on a secured registry: 401 or the right answer, never a 5xx', async () => {
    const authorization = fc.oneof(
      headerText,
      fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })).map(([u, p]) => basic(u, p)),
      fc.constant(basic('alice', 'secret')),
      fc.uint8Array({ maxLength: 30 }).map((b) => `Basic ${Buffer.from(b).toString('base64')}`),
      fc.string({ maxLength: 30 }).map((s) => `Bearer ${s}`),
    );
    await fc.assert(
      fc.asyncProperty(authorization, fc.constantFrom('/v2/', '/v2/fuzz/app/tags/list', '/v2/_catalog', '/v2/other/tags/list'), async (value, path) => {
        const answer = await send(secured.url, 'GET', path, { authorization: value });
        checkAnswer(answer, `Authorization ${value} on ${path}`);
        if (value !== basic('alice', 'secret')) assert.ok([401, 429].includes(answer.status), `${value}: ${answer.status}`);
      }),
      params(120),
    );
  });
});
