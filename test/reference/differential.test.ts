// The differential test: one scripted list of raw HTTP exchanges, sent step by step to berth and
// to the reference registry (Debian's docker-registry, CNCF Distribution 2.8, deletes enabled),
// each with its own empty storage. For every response the test compares the status, the error
// codes, selected headers (berth's `Registry-*` against the reference's `Docker-*`) and, where a
// step asks for it, the body. Values that differ by nature (upload ids, `_state` tokens, absolute
// vs relative URLs, timestamps) are normalised first.
//
// Every difference must be listed in EXPECTED_DIFFERENCES below, with the sentence of
// docs/decisions.md that explains it (the test checks the sentence is there). An unlisted
// difference fails the test, and so does a listed one that no longer happens: the table is the
// complete, current list of where berth answers otherwise than the reference.
//
// The reference's 416 responses announce the blob's Content-Length with a shorter body (see
// reference-registry.test.ts), so every request goes through node:http, which tolerates that.
//
// A second, short script runs against both with deletes disabled (Distribution's default).
//
// Setup steps (pushing the blobs a manifest needs) run on both registries but are not compared;
// exchanges whose outcome differs by design work on repositories of their own, so later steps
// see the same state on both sides.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { pushBlob } from '../helpers/blobs.js';
import { buildImage, pushContent, pushImageOK, type Image } from '../helpers/images.js';
import { startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { assertTool, needTool } from '../helpers/tools.js';

const DECISIONS = readFileSync(new URL('../../docs/decisions.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');

const sha256 = (data: Buffer | string) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

// ---------------------------------------------------------------------------------------------
// Test data: the same bytes for both registries

const BLOB = Buffer.from('hello differential blob\n'); // 24 bytes
const BLOB_DIGEST = sha256(BLOB);
const MONO = Buffer.from('a monolithic POST body\n');
const OTHER = Buffer.from('another blob, uploaded in one PUT\n');
const UNKNOWN_DIGEST = sha256('never pushed anywhere');
const SHORT = Buffer.from('0123456789abcdefghij'); // 20 bytes for upload sessions that go wrong
const OCTETS = { 'content-type': 'application/octet-stream' };

const image: Image = buildImage('oci-manifest');
const dockerImage: Image = buildImage('docker-v2');
const index: Image = buildImage('oci-index', { layers: 1 });
const missing: Image = buildImage('docker-v2', { layers: 3 }); // its blobs are never pushed
const TAGS = ['t1', 't2', 't3', 't4', 't5'];

// ---------------------------------------------------------------------------------------------
// The script

type Vars = Record<string, string>;

interface Step {
  id: string;
  method: string;
  /** path and query, or built from what earlier steps saved (upload URLs differ per registry) */
  path: string | ((v: Vars) => string);
  headers?: Record<string, string>;
  body?: Buffer;
  /** save the response's Location (path and query) under this name */
  save?: string;
  /** compare the parsed JSON body */
  json?: boolean;
  /** compare the sha256 of the body */
  bodyDigest?: boolean;
}

interface Setup {
  id: string;
  setup: (base: string) => Promise<void>;
}

/** `path` with a query parameter added (for PUT ?digest= on an upload URL) */
function withParam(path: string, key: string, value: string): string {
  const url = new URL(path, 'http://x');
  url.searchParams.append(key, value);
  return url.pathname + url.search;
}

/** `path` without one query parameter */
function withoutParam(path: string, key: string): string {
  const url = new URL(path, 'http://x');
  url.searchParams.delete(key);
  return url.pathname + url.search;
}

const uuid0 = '7e2d6a4c-0000-4000-8000-000000000000';

const SCRIPT: (Step | Setup)[] = [
  // --- base and routing
  { id: 'base', method: 'GET', path: '/v2/' },
  { id: 'base-head', method: 'HEAD', path: '/v2/' },
  { id: 'base-no-slash', method: 'GET', path: '/v2' },
  { id: 'unknown-route', method: 'GET', path: '/v2/foo/bar' },
  { id: 'v3', method: 'GET', path: '/v3/' },
  { id: 'wrong-method-blob', method: 'POST', path: `/v2/diff/blob/blobs/${BLOB_DIGEST}` },
  { id: 'wrong-method-tags', method: 'DELETE', path: '/v2/diff/blob/tags/list' },

  // --- repository names
  { id: 'name-uppercase-tags', method: 'GET', path: '/v2/Diff/tags/list' },
  { id: 'name-uppercase-manifest', method: 'GET', path: '/v2/Diff/manifests/latest' },
  { id: 'name-dots-blob', method: 'GET', path: `/v2/a..b/blobs/${BLOB_DIGEST}` },
  { id: 'name-trailing-separator-upload', method: 'POST', path: '/v2/diff-/blobs/uploads/' },
  { id: 'name-256-chars', method: 'GET', path: `/v2/${'a'.repeat(250)}/b1234/tags/list` },
  { id: 'name-255-chars-unknown', method: 'GET', path: `/v2/${'a'.repeat(249)}/b1234/tags/list` },
  { id: 'name-unknown-tags', method: 'GET', path: '/v2/diff/nothing/tags/list' },
  { id: 'name-unknown-manifest', method: 'GET', path: '/v2/diff/nothing/manifests/latest' },

  // --- digests in blob paths
  { id: 'digest-bad-hex', method: 'GET', path: '/v2/diff/blob/blobs/sha256:xyz' },
  { id: 'digest-short-hex', method: 'GET', path: '/v2/diff/blob/blobs/sha256:abc' },
  { id: 'digest-other-algorithm', method: 'GET', path: `/v2/diff/blob/blobs/md5:${'0'.repeat(32)}` },
  { id: 'digest-no-colon', method: 'GET', path: '/v2/diff/blob/blobs/notadigest' },
  { id: 'blob-unknown', method: 'GET', path: `/v2/diff/blob/blobs/${UNKNOWN_DIGEST}` },
  { id: 'blob-unknown-head', method: 'HEAD', path: `/v2/diff/blob/blobs/${UNKNOWN_DIGEST}` },

  // --- a chunked upload, in order
  { id: 'upload-start', method: 'POST', path: '/v2/diff/blob/blobs/uploads/', save: 'a' },
  { id: 'upload-status-empty', method: 'GET', path: (v) => v.a },
  { id: 'upload-patch-first', method: 'PATCH', path: (v) => v.a, headers: { ...OCTETS, 'content-range': '0-9' }, body: BLOB.subarray(0, 10), save: 'a' },
  { id: 'upload-status', method: 'GET', path: (v) => v.a },
  { id: 'upload-patch-stream', method: 'PATCH', path: (v) => v.a, headers: OCTETS, body: BLOB.subarray(10), save: 'a' },
  { id: 'upload-put-no-digest', method: 'PUT', path: (v) => v.a, headers: OCTETS },
  { id: 'upload-put-bad-digest', method: 'PUT', path: (v) => withParam(v.a, 'digest', 'sha256:xyz'), headers: OCTETS },
  { id: 'upload-put', method: 'PUT', path: (v) => withParam(v.a, 'digest', BLOB_DIGEST), headers: OCTETS },
  { id: 'upload-after-put', method: 'GET', path: (v) => v.a },

  // --- blob reads
  { id: 'blob-get', method: 'GET', path: `/v2/diff/blob/blobs/${BLOB_DIGEST}`, bodyDigest: true },
  { id: 'blob-head', method: 'HEAD', path: `/v2/diff/blob/blobs/${BLOB_DIGEST}` },
  { id: 'blob-range-first-byte', method: 'GET', path: `/v2/diff/blob/blobs/${BLOB_DIGEST}`, headers: { range: 'bytes=0-0' }, bodyDigest: true },
  { id: 'blob-range-open', method: 'GET', path: `/v2/diff/blob/blobs/${BLOB_DIGEST}`, headers: { range: 'bytes=3-' }, bodyDigest: true },
  { id: 'blob-range-suffix', method: 'GET', path: `/v2/diff/blob/blobs/${BLOB_DIGEST}`, headers: { range: 'bytes=-3' }, bodyDigest: true },
  { id: 'blob-range-past-end-clamped', method: 'GET', path: `/v2/diff/blob/blobs/${BLOB_DIGEST}`, headers: { range: 'bytes=0-100' }, bodyDigest: true },
  { id: 'blob-range-reversed', method: 'GET', path: `/v2/diff/blob/blobs/${BLOB_DIGEST}`, headers: { range: 'bytes=5-2' } },
  { id: 'blob-range-unsatisfiable', method: 'GET', path: `/v2/diff/blob/blobs/${BLOB_DIGEST}`, headers: { range: 'bytes=1000-' } },
  { id: 'blob-range-multi', method: 'GET', path: `/v2/diff/blob/blobs/${BLOB_DIGEST}`, headers: { range: 'bytes=0-1,3-4' } },
  { id: 'blob-range-other-unit', method: 'GET', path: `/v2/diff/blob/blobs/${BLOB_DIGEST}`, headers: { range: 'items=0-1' } },
  { id: 'blob-not-linked-here', method: 'GET', path: `/v2/diff/elsewhere/blobs/${BLOB_DIGEST}` },

  // --- an upload completed by one PUT with the whole body
  { id: 'upload-start-for-put', method: 'POST', path: '/v2/diff/blob/blobs/uploads/', save: 'p' },
  { id: 'upload-put-whole', method: 'PUT', path: (v) => withParam(v.p, 'digest', sha256(OTHER)), headers: OCTETS, body: OTHER },
  { id: 'blob-get-put-whole', method: 'GET', path: `/v2/diff/blob/blobs/${sha256(OTHER)}`, bodyDigest: true },

  // --- uploads that go wrong
  // one session per mistake: a refused chunk may leave the two registries at different offsets
  { id: 'out-of-order-start', method: 'POST', path: '/v2/diff/bad/blobs/uploads/', save: 'b1' },
  { id: 'out-of-order-first', method: 'PATCH', path: (v) => v.b1, headers: { ...OCTETS, 'content-range': '0-4' }, body: SHORT.subarray(0, 5), save: 'b1' },
  { id: 'out-of-order-patch', method: 'PATCH', path: (v) => v.b1, headers: { ...OCTETS, 'content-range': '10-14' }, body: SHORT.subarray(10, 15) },
  { id: 'range-garbage-start', method: 'POST', path: '/v2/diff/bad/blobs/uploads/', save: 'b2' },
  { id: 'range-garbage-patch', method: 'PATCH', path: (v) => v.b2, headers: { ...OCTETS, 'content-range': 'abc' }, body: SHORT.subarray(0, 5) },
  { id: 'length-mismatch-start', method: 'POST', path: '/v2/diff/bad/blobs/uploads/', save: 'b3' },
  { id: 'length-mismatch-patch', method: 'PATCH', path: (v) => v.b3, headers: { ...OCTETS, 'content-range': '0-4', 'content-length': '3' }, body: SHORT.subarray(0, 3) },
  { id: 'cancel-start', method: 'POST', path: '/v2/diff/bad/blobs/uploads/', save: 'b' },
  { id: 'cancel-patch', method: 'PATCH', path: (v) => v.b, headers: { ...OCTETS, 'content-range': '0-4' }, body: SHORT.subarray(0, 5), save: 'b' },
  { id: 'state-missing', method: 'GET', path: (v) => withoutParam(v.b, '_state') },
  { id: 'state-garbage', method: 'GET', path: (v) => withParam(withoutParam(v.b, '_state'), '_state', 'garbage') },
  { id: 'cancel', method: 'DELETE', path: (v) => v.b },
  { id: 'cancel-status-after', method: 'GET', path: (v) => v.b },
  { id: 'cancel-again', method: 'DELETE', path: (v) => v.b },
  { id: 'wrong-digest-upload-start', method: 'POST', path: '/v2/diff/bad/blobs/uploads/', save: 'w' },
  { id: 'wrong-digest-upload-put', method: 'PUT', path: (v) => withParam(v.w, 'digest', UNKNOWN_DIGEST), headers: OCTETS, body: SHORT },
  { id: 'wrong-digest-upload-after', method: 'GET', path: (v) => v.w },
  { id: 'upload-unknown-get', method: 'GET', path: `/v2/diff/bad/blobs/uploads/${uuid0}` },
  { id: 'upload-unknown-patch', method: 'PATCH', path: `/v2/diff/bad/blobs/uploads/${uuid0}`, headers: OCTETS, body: SHORT },
  { id: 'upload-unknown-put', method: 'PUT', path: `/v2/diff/bad/blobs/uploads/${uuid0}?digest=${sha256(SHORT)}`, headers: OCTETS, body: SHORT },
  { id: 'upload-unknown-delete', method: 'DELETE', path: `/v2/diff/bad/blobs/uploads/${uuid0}` },
  { id: 'upload-text-plain', method: 'POST', path: '/v2/diff/text/blobs/uploads/', save: 't' },
  { id: 'upload-text-plain-patch', method: 'PATCH', path: (v) => v.t, headers: { 'content-type': 'text/plain' }, body: SHORT },

  // --- monolithic POST (the reference opens a session and ignores the body)
  { id: 'monolithic-post', method: 'POST', path: `/v2/diff/mono/blobs/uploads/?digest=${sha256(MONO)}`, headers: OCTETS, body: MONO },
  { id: 'monolithic-post-head', method: 'HEAD', path: `/v2/diff/mono/blobs/${sha256(MONO)}` },

  // --- mounts
  { id: 'mount', method: 'POST', path: `/v2/diff/mounted/blobs/uploads/?mount=${BLOB_DIGEST}&from=diff/blob` },
  { id: 'mount-head', method: 'HEAD', path: `/v2/diff/mounted/blobs/${BLOB_DIGEST}` },
  { id: 'mount-unknown-blob', method: 'POST', path: `/v2/diff/mounted/blobs/uploads/?mount=${UNKNOWN_DIGEST}&from=diff/blob` },
  { id: 'mount-from-invalid-name', method: 'POST', path: `/v2/diff/mounted/blobs/uploads/?mount=${BLOB_DIGEST}&from=Not..Valid` },
  { id: 'mount-bad-digest', method: 'POST', path: '/v2/diff/mounted/blobs/uploads/?mount=sha256:xyz&from=diff/blob' },
  { id: 'mount-without-from', method: 'POST', path: `/v2/diff/mounted/blobs/uploads/?mount=${BLOB_DIGEST}` },

  // --- manifests
  { id: 'setup-image-blobs', setup: (base) => pushContent(base, 'diff/img', image) },
  { id: 'manifest-put-tag', method: 'PUT', path: '/v2/diff/img/manifests/v1', headers: { 'content-type': image.mediaType }, body: image.body },
  { id: 'manifest-get-tag', method: 'GET', path: '/v2/diff/img/manifests/v1', headers: { accept: image.mediaType }, bodyDigest: true },
  { id: 'manifest-get-no-accept', method: 'GET', path: '/v2/diff/img/manifests/v1' },
  { id: 'manifest-head-tag', method: 'HEAD', path: '/v2/diff/img/manifests/v1', headers: { accept: image.mediaType } },
  { id: 'manifest-get-digest', method: 'GET', path: `/v2/diff/img/manifests/${image.digest}`, headers: { accept: image.mediaType }, bodyDigest: true },
  { id: 'manifest-get-unknown-tag', method: 'GET', path: '/v2/diff/img/manifests/nope' },
  { id: 'manifest-get-unknown-digest', method: 'GET', path: `/v2/diff/img/manifests/${UNKNOWN_DIGEST}` },
  { id: 'manifest-get-invalid-tag', method: 'GET', path: '/v2/diff/img/manifests/-bad' },
  { id: 'manifest-get-long-tag', method: 'GET', path: `/v2/diff/img/manifests/${'t'.repeat(129)}` },
  { id: 'manifest-get-bad-digest', method: 'GET', path: '/v2/diff/img/manifests/sha256:xyz' },
  { id: 'manifest-put-by-digest', method: 'PUT', path: `/v2/diff/img/manifests/${image.digest}`, headers: { 'content-type': image.mediaType }, body: image.body },
  { id: 'manifest-put-digest-mismatch', method: 'PUT', path: `/v2/diff/img/manifests/${UNKNOWN_DIGEST}`, headers: { 'content-type': image.mediaType }, body: image.body },
  { id: 'manifest-put-invalid-json', method: 'PUT', path: '/v2/diff/img/manifests/broken', headers: { 'content-type': image.mediaType }, body: Buffer.from('{"schemaVersion": 2,') },
  { id: 'manifest-put-missing-layers', method: 'PUT', path: '/v2/diff/img/manifests/missing', headers: { 'content-type': missing.mediaType }, body: missing.body },
  { id: 'manifest-put-invalid-name', method: 'PUT', path: '/v2/Diff/img/manifests/v1', headers: { 'content-type': image.mediaType }, body: image.body },
  { id: 'setup-docker-blobs', setup: (base) => pushContent(base, 'diff/img', dockerImage) },
  { id: 'manifest-put-docker-v2', method: 'PUT', path: '/v2/diff/img/manifests/docker', headers: { 'content-type': dockerImage.mediaType }, body: dockerImage.body },
  { id: 'manifest-get-docker-v2', method: 'GET', path: '/v2/diff/img/manifests/docker', headers: { accept: dockerImage.mediaType }, bodyDigest: true },
  { id: 'index-put-missing-children', method: 'PUT', path: '/v2/diff/img/manifests/index', headers: { 'content-type': index.mediaType }, body: index.body },
  { id: 'setup-index-children', setup: (base) => pushContent(base, 'diff/img', index) },
  { id: 'index-put', method: 'PUT', path: '/v2/diff/img/manifests/index', headers: { 'content-type': index.mediaType }, body: index.body },
  { id: 'index-get', method: 'GET', path: '/v2/diff/img/manifests/index', headers: { accept: index.mediaType }, bodyDigest: true },
  { id: 'manifest-delete-by-tag', method: 'DELETE', path: '/v2/diff/img/manifests/docker' },
  { id: 'manifest-delete', method: 'DELETE', path: `/v2/diff/img/manifests/${dockerImage.digest}` },
  { id: 'manifest-get-deleted', method: 'GET', path: `/v2/diff/img/manifests/${dockerImage.digest}` },
  { id: 'manifest-get-deleted-tag', method: 'GET', path: '/v2/diff/img/manifests/docker' },
  { id: 'manifest-delete-again', method: 'DELETE', path: `/v2/diff/img/manifests/${dockerImage.digest}` },
  { id: 'manifest-delete-unknown-repo', method: 'DELETE', path: `/v2/diff/nothing/manifests/${dockerImage.digest}` },

  // --- tags and pagination
  ...TAGS.map((tag): Step => ({ id: `tags-put-${tag}`, method: 'PUT', path: `/v2/diff/img/manifests/${tag}`, headers: { 'content-type': image.mediaType }, body: image.body })),
  { id: 'tags-list', method: 'GET', path: '/v2/diff/img/tags/list', json: true },
  { id: 'tags-n2', method: 'GET', path: '/v2/diff/img/tags/list?n=2', json: true },
  { id: 'tags-n2-last', method: 'GET', path: '/v2/diff/img/tags/list?n=2&last=t2', json: true },
  { id: 'tags-last', method: 'GET', path: '/v2/diff/img/tags/list?last=t3', json: true },
  { id: 'tags-n-invalid', method: 'GET', path: '/v2/diff/img/tags/list?n=abc' },
  { id: 'tags-n-negative', method: 'GET', path: '/v2/diff/img/tags/list?n=-1' },
  { id: 'tags-n0', method: 'GET', path: '/v2/diff/img/tags/list?n=0', json: true },
  // the catalog lists repositories with manifests; give the blob repositories one each so both sides list the same
  { id: 'setup-catalog-manifests', setup: async (base) => {
    for (const name of ['diff/blob', 'diff/mounted']) {
      await pushContent(base, name, image);
      const res = await fetch(`${base}/v2/${name}/manifests/latest`, { method: 'PUT', body: image.body, headers: { 'content-type': image.mediaType } });
      assert.equal(res.status, 201, `${base}: PUT manifest to ${name}`);
    }
  } },
  { id: 'catalog', method: 'GET', path: '/v2/_catalog', json: true },
  { id: 'catalog-n1', method: 'GET', path: '/v2/_catalog?n=1', json: true },
  { id: 'catalog-n1-last', method: 'GET', path: '/v2/_catalog?n=1&last=diff/img', json: true },
  { id: 'catalog-n-invalid', method: 'GET', path: '/v2/_catalog?n=abc' },
  { id: 'setup-blob-only-repository', setup: async (base) => {
    const res = await pushBlob(base, 'diff/zz-blob-only', Buffer.from(SHORT));
    assert.equal(res.status, 201);
  } },
  { id: 'catalog-blob-only-repository', method: 'GET', path: '/v2/_catalog?last=diff/mounted', json: true },
  { id: 'catalog-n-too-big', method: 'GET', path: '/v2/_catalog?n=100000' },

  // --- blob deletes
  { id: 'blob-delete', method: 'DELETE', path: `/v2/diff/mounted/blobs/${BLOB_DIGEST}` },
  { id: 'blob-get-deleted', method: 'GET', path: `/v2/diff/mounted/blobs/${BLOB_DIGEST}` },
  { id: 'blob-delete-again', method: 'DELETE', path: `/v2/diff/mounted/blobs/${BLOB_DIGEST}` },
  { id: 'blob-delete-bad-digest', method: 'DELETE', path: '/v2/diff/mounted/blobs/sha256:xyz' },
  { id: 'blob-still-in-source', method: 'HEAD', path: `/v2/diff/blob/blobs/${BLOB_DIGEST}` },
];

// ---------------------------------------------------------------------------------------------
// What is compared

/** the fields of an observation; headers are berth's Registry-* and the reference's Docker-* */
const FIELDS = ['status', 'codes', 'api-version', 'content-digest', 'upload-uuid', 'location', 'range', 'content-range', 'link', 'content-type', 'content-length', 'etag', 'accept-ranges', 'body'] as const;
type Field = (typeof FIELDS)[number];
type Observation = Partial<Record<Field, string>>;

interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** a request through node:http, tolerant of responses whose body is shorter than announced */
function send(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: Buffer): Promise<RawResponse> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, method, path, headers: { ...(body && !headers['content-length'] ? { 'content-length': String(body.length) } : {}), ...headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let settled = false;
      const done = () => {
        if (settled) return;
        settled = true;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      };
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', done);
      res.on('aborted', done);
      res.on('error', done);
      res.on('close', done);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** path + query of a Location or Link URL, upload ids and `_state` tokens replaced by placeholders */
function normaliseURL(value: string): string {
  const url = new URL(value, 'http://placeholder');
  const path = url.pathname.replace(/\/blobs\/uploads\/[^/]+$/, '/blobs/uploads/<uuid>');
  // parameter order carries no meaning (the reference writes `last` before `n`, berth the spec's order)
  const params = [...url.searchParams.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${k}=${k === '_state' ? '<state>' : v}`);
  return params.length > 0 ? `${path}?${params.join('&')}` : path;
}

function header(res: RawResponse, name: string): string | undefined {
  const value = res.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

function observe(res: RawResponse, twin: 'registry' | 'docker', step: Step): Observation {
  const o: Observation = { status: String(res.status) };
  const text = res.body.toString('utf8');
  if (res.status >= 400 && res.body.length > 0) {
    try {
      const errors = (JSON.parse(text) as { errors: { code: string }[] }).errors;
      o.codes = errors.map((e) => e.code).join(',');
    } catch {
      o.codes = `<not JSON: ${text.trim().slice(0, 40)}>`;
    }
  }
  o['api-version'] = header(res, `${twin}-distribution-api-version`);
  o['content-digest'] = header(res, `${twin}-content-digest`);
  o['upload-uuid'] = header(res, `${twin}-upload-uuid`) === undefined ? undefined : '<present>';
  const location = header(res, 'location');
  o.location = location === undefined ? undefined : normaliseURL(location);
  o.range = header(res, 'range');
  o['content-range'] = header(res, 'content-range');
  const link = header(res, 'link');
  o.link = link === undefined ? undefined : link.replace(/<([^>]*)>/, (_, u: string) => `<${normaliseURL(u)}>`);
  // entity headers only where there is an entity: error bodies and broken 416s are compared by code
  if (res.status < 300) {
    o['content-type'] = header(res, 'content-type')?.split(';')[0];
    // a JSON body is compared parsed (the reference ends its JSON with a newline)
    if (!step.json) o['content-length'] = header(res, 'content-length');
    o.etag = header(res, 'etag');
    o['accept-ranges'] = header(res, 'accept-ranges');
  }
  if (step.json && res.status === 200) o.body = JSON.stringify(JSON.parse(text));
  if (step.bodyDigest && res.status < 300) o.body = sha256(res.body);
  for (const key of Object.keys(o) as Field[]) if (o[key] === undefined) delete o[key];
  return o;
}

// ---------------------------------------------------------------------------------------------
// Where berth differs from the reference, step by step; `decision` is quoted from docs/decisions.md

/** a value that is not the same on every run (the reference's tag order follows the directory) */
interface Matcher {
  describe: string;
  matches(value: string | undefined): boolean;
}
type Expected = string | undefined | Matcher;
interface Difference {
  berth: Expected;
  reference: Expected;
  /** a sentence of docs/decisions.md */
  decision: string;
  /** the difference may not show on every run (the values can coincide) */
  maybe?: true;
}

const ALL_TAGS = ['index', 't1', 't2', 't3', 't4', 't5', 'v1'];
const EVERY_TAG_IN_ANY_ORDER: Matcher = {
  describe: `{"name":"diff/img","tags":${JSON.stringify(ALL_TAGS)} in any order}`,
  matches(value) {
    if (value === undefined) return false;
    const body = JSON.parse(value) as { name: string; tags: string[] };
    return body.name === 'diff/img' && JSON.stringify([...body.tags].sort()) === JSON.stringify(ALL_TAGS);
  },
};

const show = (expected: Expected): string => (typeof expected === 'object' ? expected.describe : JSON.stringify(expected));

function matches(expected: Expected, value: string | undefined): boolean {
  return typeof expected === 'object' ? expected.matches(value) : expected === value;
}

const MONO_DIGEST = sha256(MONO);

/** the sentences of docs/decisions.md the differences rest on (whitespace as in one line) */
const D = {
  NOSLASH: "answers like `/v2/`; the reference redirects (301)",
  ROUTE: "**Unknown routes answer 404 with a JSON error body**, code `NOT_FOUND`",
  METHOD: "**A method a route does not support** answers 405 `UNSUPPORTED` with an `Allow` header.",
  NAME: "**Invalid repository names answer 400 `NAME_INVALID`** (spec 2.1, 4.x), not the reference's plain-text router 404.",
  NAME_LONG: "A name of 256 characters or more is `NAME_INVALID` as well (the reference answers 500 `UNKNOWN`).",
  NAME_HOST: "the reference reads a first component such as `Diff` in `Diff/img` as a registry host name",
  NO_REPO: "answers 404 `NAME_UNKNOWN` (spec 4.3, 4.5); the reference says `MANIFEST_UNKNOWN`.",
  DIGEST: "A malformed digest, or another algorithm in a path, is 400 `DIGEST_INVALID`",
  NO_CONTENT: "and cancel (DELETE) answer 204 with `Content-Length: 0`**, as spec 4.9 lists it; the reference sends no `Content-Length` on its 204s.",
  RANGE: "A malformed or unsatisfiable header answers 416 `RANGE_INVALID` with a JSON body and `Content-Range: bytes */<size>` (RFC 7233 4.4; the reference sends it only for a range past the end).",
  RANGE_MULTI: "Of several ranges berth serves the first satisfiable one as a single part; the reference serves multipart/byteranges",
  CONTENT_RANGE: "**`Content-Range` on PATCH and PUT is enforced**",
  SIZE: "When both `Content-Length` and `Content-Range` are sent and disagree, 400 `SIZE_INVALID` and nothing is written",
  STATE: "A missing or altered token answers 400 `BLOB_UPLOAD_INVALID`",
  UPLOAD_UNKNOWN: "**An unknown upload id answers 404 `BLOB_UPLOAD_UNKNOWN`**",
  CHUNK_TYPE: "**The Content-Type of a chunk is not checked**",
  MONOLITHIC: "**Monolithic `POST ?digest=`** is supported (spec 4.8). The reference ignores the body and opens a session (202).",
  TAG: "**An invalid tag in a manifest path** (`-bad`, more than 128 characters) answers 400 `TAG_INVALID`",
  MANIFEST_DIGEST: "as manifest reference** (`sha256:xyz`) is 400 `DIGEST_INVALID`; the reference answers 500 `UNKNOWN`.",
  MISSING_REFS: "the reference says `MANIFEST_BLOB_UNKNOWN` for both",
  DELETE_TAG: "(spec change set c; the status is not shown by the spec). The reference answers 400 `DIGEST_INVALID`.",
  TAG_ORDER: "the reference lists tags in the order its filesystem driver reads the directory, unsorted",
  TAGS_N: "ignores `n` and `last` on tags altogether (it always answers the whole list).",
  N_INVALID: "`abc`, `-1`, `1.5`, an empty `n=` or more than the cap are 400 `PAGINATION_NUMBER_INVALID`.",
  LINK_FULL: "The reference also sends one when the last page is exactly full.",
  BLOB_ONLY: "Distribution 2.8 lists repositories by `_layers` in the catalog",
  NEGOTIATION: "The reference answers 404 `MANIFEST_UNKNOWN` to a GET or HEAD of an OCI manifest whose `Accept` does not name the OCI type.",
  BLOB_DELETE: "**Blob DELETE** answers 202 with `Registry-Content-Digest` (spec 4.7); the reference sends no digest header.",
} as const;

const EXPECTED_DIFFERENCES: Record<string, Partial<Record<Field, Difference>>> = {
  'base-no-slash': {
    'status': { berth: "200", reference: "301", decision: D.NOSLASH },
    'location': { berth: undefined, reference: "/v2/", decision: D.NOSLASH },
    'content-type': { berth: "application/json", reference: undefined, decision: D.NOSLASH },
    'content-length': { berth: "2", reference: undefined, decision: D.NOSLASH },
  },
  'unknown-route': {
    'codes': { berth: "NOT_FOUND", reference: "<not JSON: 404 page not found>", decision: D.ROUTE },
  },
  'v3': {
    'codes': { berth: "NOT_FOUND", reference: "<not JSON: 404 page not found>", decision: D.ROUTE },
  },
  'wrong-method-blob': {
    'codes': { berth: "UNSUPPORTED", reference: "<not JSON: Method not allowed>", decision: D.METHOD },
  },
  'wrong-method-tags': {
    'codes': { berth: "UNSUPPORTED", reference: "<not JSON: Method not allowed>", decision: D.METHOD },
  },
  'name-uppercase-tags': {
    'status': { berth: "400", reference: "404", decision: D.NAME },
    'codes': { berth: "NAME_INVALID", reference: "<not JSON: 404 page not found>", decision: D.NAME },
  },
  'name-uppercase-manifest': {
    'status': { berth: "400", reference: "404", decision: D.NAME },
    'codes': { berth: "NAME_INVALID", reference: "<not JSON: 404 page not found>", decision: D.NAME },
  },
  'name-dots-blob': {
    'status': { berth: "400", reference: "404", decision: D.NAME },
    'codes': { berth: "NAME_INVALID", reference: "<not JSON: 404 page not found>", decision: D.NAME },
  },
  'name-trailing-separator-upload': {
    'status': { berth: "400", reference: "404", decision: D.NAME },
    'codes': { berth: "NAME_INVALID", reference: "<not JSON: 404 page not found>", decision: D.NAME },
  },
  'name-256-chars': {
    'status': { berth: "400", reference: "500", decision: D.NAME_LONG },
    'codes': { berth: "NAME_INVALID", reference: "UNKNOWN", decision: D.NAME_LONG },
  },
  'name-unknown-manifest': {
    'codes': { berth: "NAME_UNKNOWN", reference: "MANIFEST_UNKNOWN", decision: D.NO_REPO },
  },
  'digest-no-colon': {
    'status': { berth: "400", reference: "404", decision: D.DIGEST },
    'codes': { berth: "DIGEST_INVALID", reference: "<not JSON: 404 page not found>", decision: D.DIGEST },
  },
  'upload-status-empty': {
    'content-length': { berth: "0", reference: undefined, decision: D.NO_CONTENT },
  },
  'upload-status': {
    'content-length': { berth: "0", reference: undefined, decision: D.NO_CONTENT },
  },
  'blob-range-reversed': {
    'codes': { berth: "RANGE_INVALID", reference: "<not JSON: invalid range>", decision: D.RANGE },
    'content-range': { berth: "bytes */24", reference: undefined, decision: D.RANGE },
  },
  'blob-range-unsatisfiable': {
    'codes': { berth: "RANGE_INVALID", reference: undefined, decision: D.RANGE },
  },
  'blob-range-multi': {
    'content-range': { berth: "bytes 0-1/24", reference: undefined, decision: D.RANGE_MULTI },
    'content-type': { berth: "application/octet-stream", reference: "multipart/byteranges", decision: D.RANGE_MULTI },
    'content-length': { berth: "2", reference: "344", decision: D.RANGE_MULTI },
  },
  'blob-range-other-unit': {
    'codes': { berth: "RANGE_INVALID", reference: "<not JSON: invalid range>", decision: D.RANGE },
    'content-range': { berth: "bytes */24", reference: undefined, decision: D.RANGE },
  },
  'out-of-order-patch': {
    'status': { berth: "416", reference: "202", decision: D.CONTENT_RANGE },
    'range': { berth: "0-4", reference: "0-9", decision: D.CONTENT_RANGE },
    'content-length': { berth: undefined, reference: "0", decision: D.CONTENT_RANGE },
  },
  'range-garbage-patch': {
    'status': { berth: "416", reference: "202", decision: D.CONTENT_RANGE },
    'range': { berth: "0-0", reference: "0-4", decision: D.CONTENT_RANGE },
    'content-length': { berth: undefined, reference: "0", decision: D.CONTENT_RANGE },
  },
  'length-mismatch-patch': {
    'status': { berth: "400", reference: "202", decision: D.SIZE },
    'codes': { berth: "SIZE_INVALID", reference: undefined, decision: D.SIZE },
    'upload-uuid': { berth: undefined, reference: "<present>", decision: D.SIZE },
    'location': { berth: undefined, reference: "/v2/diff/bad/blobs/uploads/<uuid>?_state=<state>", decision: D.SIZE },
    'range': { berth: undefined, reference: "0-2", decision: D.SIZE },
    'content-length': { berth: undefined, reference: "0", decision: D.SIZE },
  },
  'state-missing': {
    'status': { berth: "400", reference: "404", decision: D.STATE },
  },
  'state-garbage': {
    'status': { berth: "400", reference: "404", decision: D.STATE },
  },
  'cancel': {
    'content-length': { berth: "0", reference: undefined, decision: D.NO_CONTENT },
  },
  'wrong-digest-upload-after': {
    'codes': { berth: "BLOB_UPLOAD_UNKNOWN", reference: "BLOB_UPLOAD_INVALID", decision: D.UPLOAD_UNKNOWN },
  },
  'upload-unknown-get': {
    'codes': { berth: "BLOB_UPLOAD_UNKNOWN", reference: "BLOB_UPLOAD_INVALID", decision: D.UPLOAD_UNKNOWN },
  },
  'upload-unknown-patch': {
    'codes': { berth: "BLOB_UPLOAD_UNKNOWN", reference: "BLOB_UPLOAD_INVALID", decision: D.UPLOAD_UNKNOWN },
  },
  'upload-unknown-put': {
    'codes': { berth: "BLOB_UPLOAD_UNKNOWN", reference: "BLOB_UPLOAD_INVALID", decision: D.UPLOAD_UNKNOWN },
  },
  'upload-unknown-delete': {
    'codes': { berth: "BLOB_UPLOAD_UNKNOWN", reference: "BLOB_UPLOAD_INVALID", decision: D.UPLOAD_UNKNOWN },
  },
  'upload-text-plain-patch': {
    'status': { berth: "202", reference: "500", decision: D.CHUNK_TYPE },
    'codes': { berth: undefined, reference: "UNKNOWN", decision: D.CHUNK_TYPE },
    'upload-uuid': { berth: "<present>", reference: undefined, decision: D.CHUNK_TYPE },
    'location': { berth: "/v2/diff/text/blobs/uploads/<uuid>?_state=<state>", reference: undefined, decision: D.CHUNK_TYPE },
    'range': { berth: "0-19", reference: undefined, decision: D.CHUNK_TYPE },
    'content-length': { berth: "0", reference: undefined, decision: D.CHUNK_TYPE },
  },
  'monolithic-post': {
    'status': { berth: "201", reference: "202", decision: D.MONOLITHIC },
    'content-digest': { berth: MONO_DIGEST, reference: undefined, decision: D.MONOLITHIC },
    'location': { berth: `/v2/diff/mono/blobs/${MONO_DIGEST}`, reference: "/v2/diff/mono/blobs/uploads/<uuid>?_state=<state>", decision: D.MONOLITHIC },
    'range': { berth: undefined, reference: "0-0", decision: D.MONOLITHIC },
  },
  'monolithic-post-head': {
    'status': { berth: "200", reference: "404", decision: D.MONOLITHIC },
    'content-digest': { berth: MONO_DIGEST, reference: undefined, decision: D.MONOLITHIC },
    'content-type': { berth: "application/octet-stream", reference: undefined, decision: D.MONOLITHIC },
    'content-length': { berth: "23", reference: undefined, decision: D.MONOLITHIC },
    'etag': { berth: `"${MONO_DIGEST}"`, reference: undefined, decision: D.MONOLITHIC },
    'accept-ranges': { berth: "bytes", reference: undefined, decision: D.MONOLITHIC },
  },
  'manifest-get-invalid-tag': {
    'status': { berth: "400", reference: "404", decision: D.TAG },
    'codes': { berth: "TAG_INVALID", reference: "<not JSON: 404 page not found>", decision: D.TAG },
  },
  'manifest-get-long-tag': {
    'status': { berth: "400", reference: "404", decision: D.TAG },
    'codes': { berth: "TAG_INVALID", reference: "<not JSON: 404 page not found>", decision: D.TAG },
  },
  'manifest-get-bad-digest': {
    'status': { berth: "400", reference: "500", decision: D.MANIFEST_DIGEST },
    'codes': { berth: "DIGEST_INVALID", reference: "UNKNOWN", decision: D.MANIFEST_DIGEST },
  },
  'manifest-put-missing-layers': {
    'codes': { berth: "BLOB_UNKNOWN,BLOB_UNKNOWN,BLOB_UNKNOWN,BLOB_UNKNOWN", reference: "MANIFEST_BLOB_UNKNOWN,MANIFEST_BLOB_UNKNOWN,MANIFEST_BLOB_UNKNOWN,MANIFEST_BLOB_UNKNOWN", decision: D.MISSING_REFS },
  },
  'manifest-put-invalid-name': {
    'codes': { berth: "NAME_INVALID", reference: "MANIFEST_BLOB_UNKNOWN,MANIFEST_BLOB_UNKNOWN,MANIFEST_BLOB_UNKNOWN", decision: D.NAME_HOST },
  },
  'index-put-missing-children': {
    'codes': { berth: "MANIFEST_UNKNOWN,MANIFEST_UNKNOWN", reference: "MANIFEST_BLOB_UNKNOWN,MANIFEST_BLOB_UNKNOWN", decision: D.MISSING_REFS },
  },
  'manifest-delete-by-tag': {
    'status': { berth: "405", reference: "400", decision: D.DELETE_TAG },
    'codes': { berth: "UNSUPPORTED", reference: "DIGEST_INVALID", decision: D.DELETE_TAG },
  },
  'manifest-delete-unknown-repo': {
    'codes': { berth: "NAME_UNKNOWN", reference: "MANIFEST_UNKNOWN", decision: D.NO_REPO },
  },
  'tags-list': {
    'body': { berth: "{\"name\":\"diff/img\",\"tags\":[\"index\",\"t1\",\"t2\",\"t3\",\"t4\",\"t5\",\"v1\"]}", reference: EVERY_TAG_IN_ANY_ORDER, decision: D.TAG_ORDER, maybe: true },
  },
  'tags-n2': {
    'link': { berth: "</v2/diff/img/tags/list?last=t1&n=2>; rel=\"next\"", reference: undefined, decision: D.TAGS_N },
    'body': { berth: "{\"name\":\"diff/img\",\"tags\":[\"index\",\"t1\"]}", reference: EVERY_TAG_IN_ANY_ORDER, decision: D.TAGS_N },
  },
  'tags-n2-last': {
    'link': { berth: "</v2/diff/img/tags/list?last=t4&n=2>; rel=\"next\"", reference: undefined, decision: D.TAGS_N },
    'body': { berth: "{\"name\":\"diff/img\",\"tags\":[\"t3\",\"t4\"]}", reference: EVERY_TAG_IN_ANY_ORDER, decision: D.TAGS_N },
  },
  'tags-last': {
    'body': { berth: "{\"name\":\"diff/img\",\"tags\":[\"t4\",\"t5\",\"v1\"]}", reference: EVERY_TAG_IN_ANY_ORDER, decision: D.TAGS_N },
  },
  'tags-n-invalid': {
    'status': { berth: "400", reference: "200", decision: D.N_INVALID },
    'codes': { berth: "PAGINATION_NUMBER_INVALID", reference: undefined, decision: D.N_INVALID },
    'content-type': { berth: undefined, reference: "application/json", decision: D.N_INVALID },
    'content-length': { berth: undefined, reference: "67", decision: D.N_INVALID },
  },
  'tags-n-negative': {
    'status': { berth: "400", reference: "200", decision: D.N_INVALID },
    'codes': { berth: "PAGINATION_NUMBER_INVALID", reference: undefined, decision: D.N_INVALID },
    'content-type': { berth: undefined, reference: "application/json", decision: D.N_INVALID },
    'content-length': { berth: undefined, reference: "67", decision: D.N_INVALID },
  },
  'tags-n0': {
    'body': { berth: "{\"name\":\"diff/img\",\"tags\":[]}", reference: EVERY_TAG_IN_ANY_ORDER, decision: D.TAGS_N },
  },
  'catalog-n1-last': {
    'link': { berth: undefined, reference: "</v2/_catalog?last=diff/mounted&n=1>; rel=\"next\"", decision: D.LINK_FULL },
  },
  'catalog-n-invalid': {
    'status': { berth: "400", reference: "200", decision: D.N_INVALID },
    'codes': { berth: "PAGINATION_NUMBER_INVALID", reference: undefined, decision: D.N_INVALID },
    'content-type': { berth: undefined, reference: "application/json", decision: D.N_INVALID },
    'content-length': { berth: undefined, reference: "57", decision: D.N_INVALID },
  },
  'catalog-blob-only-repository': {
    'body': { berth: "{\"repositories\":[]}", reference: "{\"repositories\":[\"diff/zz-blob-only\"]}", decision: D.BLOB_ONLY },
  },
  'manifest-get-no-accept': {
    'status': { berth: '200', reference: '404', decision: D.NEGOTIATION },
    'codes': { berth: undefined, reference: 'MANIFEST_UNKNOWN', decision: D.NEGOTIATION },
    'content-digest': { berth: image.digest, reference: undefined, decision: D.NEGOTIATION },
    'content-type': { berth: image.mediaType, reference: undefined, decision: D.NEGOTIATION },
    'content-length': { berth: String(image.body.length), reference: undefined, decision: D.NEGOTIATION },
    'etag': { berth: `"${image.digest}"`, reference: undefined, decision: D.NEGOTIATION },
  },
  'blob-delete': {
    'content-digest': { berth: BLOB_DIGEST, reference: undefined, decision: D.BLOB_DELETE },
  },
};

// ---------------------------------------------------------------------------------------------

type Found = Record<string, Partial<Record<Field, { berth: string | undefined; reference: string | undefined }>>>;

/** runs `script` step by step on both registries; returns every difference and every missing Docker-* twin */
async function runScript(script: (Step | Setup)[], berthURL: string, refURL: string): Promise<{ found: Found; twinProblems: string[] }> {
  const found: Found = {};
  const twinProblems: string[] = [];
  const vars: Record<'berth' | 'reference', Vars> = { berth: {}, reference: {} };
  for (const step of script) {
    if ('setup' in step) {
      await step.setup(berthURL);
      await step.setup(refURL);
      continue;
    }
    const observed: Record<'berth' | 'reference', Observation> = { berth: {}, reference: {} };
    for (const [side, base] of [['berth', berthURL], ['reference', refURL]] as const) {
      const path = typeof step.path === 'string' ? step.path : step.path(vars[side]);
      const res = await send(base, step.method, path, step.headers, step.body);
      observed[side] = observe(res, side === 'berth' ? 'registry' : 'docker', step);
      if (step.save && res.headers.location) {
        const url = new URL(res.headers.location, base);
        vars[side][step.save] = url.pathname + url.search;
      }
      if (side === 'berth') {
        for (const [name, value] of Object.entries(res.headers)) {
          if (!name.startsWith('registry-')) continue;
          const twin = res.headers[`docker-${name.slice('registry-'.length)}`];
          if (String(twin) !== String(value)) twinProblems.push(`${step.id}: ${name}: ${String(value)} but docker-${name.slice(9)}: ${String(twin)}`);
        }
      }
    }
    for (const field of FIELDS) {
      const [b, r] = [observed.berth[field], observed.reference[field]];
      if (b !== r) (found[step.id] ??= {})[field] = { berth: b, reference: r };
    }
  }
  return { found, twinProblems };
}

/** fails on a difference the table does not list, and on a listed one that did not happen */
function assertDifferences(found: Found, table: Record<string, Partial<Record<Field, Difference>>>): void {
  // BERTH_DIFF_DUMP=<file> writes every difference found, to help update the table
  if (process.env.BERTH_DIFF_DUMP) writeFileSync(process.env.BERTH_DIFF_DUMP, JSON.stringify(found, null, 2));
  const unexpected: string[] = [];
  const stale: string[] = [];
  for (const [id, fields] of Object.entries(found)) {
    for (const [field, diff] of Object.entries(fields)) {
      const expected = table[id]?.[field as Field];
      if (!expected || !matches(expected.berth, diff.berth) || !matches(expected.reference, diff.reference)) {
        const listed = expected ? ` (the table expects berth ${show(expected.berth)}, reference ${show(expected.reference)})` : '';
        unexpected.push(`${id} ${field}: berth ${JSON.stringify(diff.berth)}, reference ${JSON.stringify(diff.reference)}${listed}`);
      }
    }
  }
  for (const [id, fields] of Object.entries(table)) {
    for (const [field, expected] of Object.entries(fields)) if (!expected.maybe && !found[id]?.[field as Field]) stale.push(`${id} ${field}`);
  }
  assert.deepEqual(unexpected, [], 'differences not in the table of expected differences (a bug, or a decision to record)');
  assert.deepEqual(stale, [], 'expected differences that no longer happen');
}

function assertQuotesDecisions(table: Record<string, Partial<Record<Field, Difference>>>): void {
  const missingQuotes = Object.entries(table).flatMap(([id, fields]) =>
    Object.entries(fields)
      .filter(([, d]) => !DECISIONS.includes(d.decision))
      .map(([field, d]) => `${id} ${field}: "${d.decision}"`),
  );
  assert.deepEqual(missingQuotes, []);
}

describe('differential: berth and the reference registry on the same exchanges', needTool('docker-registry', 'the differential test'), () => {
  let berth: TestRegistry;
  let ref: ReferenceRegistry;
  let result: { found: Found; twinProblems: string[] };

  before(async () => {
    assertTool('docker-registry', 'the differential test');
    [berth, ref] = await Promise.all([startBerth(), startReferenceRegistry({ deleteEnabled: true, config: { log: { level: 'error' } } })]);
    result = await runScript(SCRIPT, berth.url, ref.url);
  });
  after(async () => {
    await berth?.stop();
    await ref?.stop();
  });

  it('every Registry-* header of berth has its Docker-* twin with the same value', () => {
    assert.deepEqual(result.twinProblems, []);
  });

  it('berth differs from the reference only where EXPECTED_DIFFERENCES says, and there it does', () => {
    assertDifferences(result.found, EXPECTED_DIFFERENCES);
  });

  it('every expected difference quotes docs/decisions.md', () => {
    assertQuotesDecisions(EXPECTED_DIFFERENCES);
  });

  it('the script covers every endpoint of the spec', () => {
    const steps = SCRIPT.filter((s): s is Step => 'method' in s);
    const covered = new Set(steps.map((s) => `${s.method} ${endpointOf(typeof s.path === 'string' ? s.path : s.path(new Proxy({}, { get: () => '/v2/x/blobs/uploads/u' })))}`));
    const endpoints = ['GET base', 'GET tags', 'GET manifest', 'HEAD manifest', 'PUT manifest', 'DELETE manifest', 'GET blob', 'HEAD blob', 'DELETE blob', 'POST uploads', 'GET upload', 'PATCH upload', 'PUT upload', 'DELETE upload', 'GET catalog'];
    assert.deepEqual(endpoints.filter((e) => !covered.has(e)), []);
  });
});

// ---------------------------------------------------------------------------------------------
// The same comparison with deletes disabled (Distribution's default, storage.delete.enabled false)

const NODELETE_SCRIPT: (Step | Setup)[] = [
  { id: 'setup-image', setup: (base) => pushImageOK(base, 'nodel/img', image, 'v1').then(() => undefined) },
  { id: 'nodelete-blob', method: 'DELETE', path: `/v2/nodel/img/blobs/${image.blobs[1].digest}` },
  { id: 'nodelete-blob-unknown', method: 'DELETE', path: `/v2/nodel/img/blobs/${UNKNOWN_DIGEST}` },
  { id: 'nodelete-manifest', method: 'DELETE', path: `/v2/nodel/img/manifests/${image.digest}` },
  { id: 'nodelete-manifest-by-tag', method: 'DELETE', path: '/v2/nodel/img/manifests/v1' },
  { id: 'nodelete-blob-still-there', method: 'HEAD', path: `/v2/nodel/img/blobs/${image.blobs[1].digest}` },
  { id: 'nodelete-manifest-still-there', method: 'HEAD', path: `/v2/nodel/img/manifests/${image.digest}`, headers: { accept: image.mediaType } },
  { id: 'nodelete-upload-start', method: 'POST', path: '/v2/nodel/img/blobs/uploads/', save: 'u' },
  { id: 'nodelete-upload-cancel', method: 'DELETE', path: (v) => v.u },
  { id: 'nodelete-push-still-works', method: 'PUT', path: '/v2/nodel/img/manifests/v2', headers: { 'content-type': image.mediaType }, body: image.body },
];

const NODELETE_EXPECTED_DIFFERENCES: Record<string, Partial<Record<Field, Difference>>> = {
  'nodelete-upload-cancel': {
    'content-length': { berth: '0', reference: undefined, decision: D.NO_CONTENT },
  },
};

describe('differential with deletes disabled', needTool('docker-registry', 'the differential test'), () => {
  let berth: TestRegistry;
  let ref: ReferenceRegistry;
  let result: { found: Found; twinProblems: string[] };

  before(async () => {
    assertTool('docker-registry', 'the differential test');
    [berth, ref] = await Promise.all([startBerth({ storage: { delete: { enabled: false } } }), startReferenceRegistry({ deleteEnabled: false, config: { log: { level: 'error' } } })]);
    result = await runScript(NODELETE_SCRIPT, berth.url, ref.url);
  });
  after(async () => {
    await berth?.stop();
    await ref?.stop();
  });

  it('berth differs only where NODELETE_EXPECTED_DIFFERENCES says; every Docker-* twin is there', () => {
    assert.deepEqual(result.twinProblems, []);
    assertDifferences(result.found, NODELETE_EXPECTED_DIFFERENCES);
    assertQuotesDecisions(NODELETE_EXPECTED_DIFFERENCES);
  });
});

function endpointOf(path: string): string {
  const p = path.split('?')[0];
  if (/^\/v2\/?$/.test(p)) return 'base';
  if (p === '/v2/_catalog') return 'catalog';
  if (p.endsWith('/tags/list')) return 'tags';
  if (/\/manifests\/[^/]+$/.test(p)) return 'manifest';
  if (/\/blobs\/uploads\/$/.test(p)) return 'uploads';
  if (/\/blobs\/uploads\/[^/]+$/.test(p)) return 'upload';
  if (/\/blobs\/[^/]+$/.test(p)) return 'blob';
  return 'other';
}
