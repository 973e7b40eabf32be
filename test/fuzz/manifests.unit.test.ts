/**
 * Property tests (issue 18) of the manifest parser (src/registry/manifests/) in every format:
 * OCI image and index, Docker schema2 and manifest list, signed schema1 (JWS). A generated valid
 * manifest parses and round-trips (format, digest, blobs, children); a mutated one, random JSON or
 * random bytes either parse or are refused with MANIFEST_INVALID, DIGEST_INVALID or
 * MANIFEST_UNVERIFIED: never another exception.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseManifest, referencesOf, MediaTypes, supportedManifestMediaTypes, type ParsedManifest } from '../../src/registry/manifests/index.js';
import { detectMediaType } from '../../src/registry/manifests/detect.js';
import { digestBytes, isDigest } from '../../src/registry/digest.js';
import type { ErrorCode } from '../../src/registry/errors.js';
import { generateKey, signSchema1, type TestKey } from '../registry/manifests/sign-schema1.js';
import { outcomeAsync, params } from './fuzz.js';

const MANIFEST_ERRORS: ErrorCode[] = ['MANIFEST_INVALID', 'DIGEST_INVALID', 'MANIFEST_UNVERIFIED'];

const HEX = { sha256: 64, sha384: 96, sha512: 128 } as const;
const digest = fc
  .constantFrom('sha256', 'sha384', 'sha512' as const)
  .chain((algorithm) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: HEX[algorithm], maxLength: HEX[algorithm] }).map((hex) => `${algorithm}:${hex}`));
const text = fc.string({ maxLength: 12 });
const mediaType = fc.oneof(fc.constantFrom('application/vnd.oci.image.layer.v1.tar+gzip', 'application/vnd.docker.image.rootfs.diff.tar.gzip', 'application/octet-stream'), fc.string({ minLength: 1, maxLength: 20 }));
const descriptor = fc.record(
  {
    mediaType,
    digest,
    size: fc.nat(),
    annotations: fc.dictionary(text, text, { maxKeys: 3 }),
    urls: fc.array(fc.webUrl(), { maxLength: 2 }),
    platform: fc.record({ architecture: text, os: text, variant: text }, { requiredKeys: ['architecture', 'os'] }),
  },
  { requiredKeys: ['mediaType', 'digest', 'size'], noNullPrototype: true },
);
// foreign and non-distributable layers with urls are excluded from what must exist: keep layers plain
const layer = descriptor.map(({ urls: _urls, platform: _platform, ...rest }) => rest);
const descriptors = (item: fc.Arbitrary<object>) => fc.array(item, { maxLength: 8 });

type Kind = 'oci-manifest' | 'oci-index' | 'schema2' | 'manifest-list';
const valid: Record<Kind, fc.Arbitrary<Record<string, unknown>>> = {
  'oci-manifest': fc.record(
    { schemaVersion: fc.constant(2), mediaType: fc.constant(MediaTypes.ociManifest), config: layer, layers: descriptors(layer), subject: layer, artifactType: text, annotations: fc.dictionary(text, text, { maxKeys: 3 }) },
    { requiredKeys: ['schemaVersion', 'config', 'layers'], noNullPrototype: true },
  ),
  'oci-index': fc.record(
    { schemaVersion: fc.constant(2), mediaType: fc.constant(MediaTypes.ociIndex), manifests: descriptors(descriptor), subject: layer, artifactType: text, annotations: fc.dictionary(text, text, { maxKeys: 3 }) },
    { requiredKeys: ['schemaVersion', 'manifests'], noNullPrototype: true },
  ),
  schema2: fc.record({ schemaVersion: fc.constant(2), mediaType: fc.constantFrom(MediaTypes.dockerSchema2, MediaTypes.schema2), config: layer, layers: descriptors(layer) }, { noNullPrototype: true }),
  'manifest-list': fc.record(
    { schemaVersion: fc.constant(2), mediaType: fc.constantFrom(MediaTypes.dockerManifestList, MediaTypes.manifestList), manifests: descriptors(descriptor) },
    { noNullPrototype: true },
  ),
};
const validManifest = fc.constantFrom(...(Object.keys(valid) as Kind[])).chain((kind) => valid[kind].map((doc) => ({ kind, doc })));

/** what any successful parse must satisfy, whatever went in */
function checkParsed(parsed: ParsedManifest): void {
  assert.equal(parsed.digest, digestBytes('sha256', parsed.payload));
  for (const blob of [...parsed.blobs, ...parsed.manifests]) assert.ok(isDigest(blob.digest), blob.digest);
  assert.equal(new Set(parsed.blobs.map((b) => b.digest)).size, parsed.blobs.length, 'blobs are listed once each');
}

const unique = (digests: string[]) => [...new Set(digests)];

test('valid OCI, schema2 and list manifests round-trip: format, digest, blobs and children', async () => {
  await fc.assert(
    fc.asyncProperty(validManifest, fc.constantFrom('header', 'body', 'generic'), async ({ kind, doc }, typeFrom) => {
      const body = Buffer.from(JSON.stringify(doc, null, 3));
      // an OCI manifest may leave its mediaType out: the Content-Type then names the format
      const own = (doc.mediaType as string | undefined) ?? (kind === 'oci-index' ? MediaTypes.ociIndex : MediaTypes.ociManifest);
      const contentType = typeFrom === 'header' || doc.mediaType === undefined ? own : typeFrom === 'generic' ? 'application/json' : undefined;
      const parsed = await parseManifest(contentType, body);
      checkParsed(parsed);
      assert.equal(parsed.format, kind);
      assert.equal(parsed.digest, digestBytes('sha256', body));
      const d = doc as { config?: { digest: string }; layers?: { digest: string }[]; manifests?: { digest: string }[]; subject?: { digest: string } };
      assert.deepEqual(
        parsed.blobs.map((b) => b.digest),
        unique([...(d.config ? [d.config.digest] : []), ...(d.layers ?? []).map((l) => l.digest)]),
      );
      assert.deepEqual(
        parsed.manifests.map((m) => m.digest),
        (d.manifests ?? []).map((m) => m.digest),
      );
      assert.equal(parsed.subject?.digest, d.subject?.digest);
      // what notifications and deletes read from stored bytes agrees with the parse
      const refs = referencesOf(body);
      assert.deepEqual(refs.manifests.map((m) => m.digest), parsed.manifests.map((m) => m.digest));
      if (doc.mediaType !== undefined) assert.equal(detectMediaType(body), doc.mediaType);
    }),
    params(300),
  );
});

type Path = (string | number)[];

/** every path into `doc`, its root included */
function paths(value: unknown, prefix: Path = []): Path[] {
  const here = [prefix];
  if (Array.isArray(value)) return [...here, ...value.flatMap((v, i) => paths(v, [...prefix, i]))];
  if (value !== null && typeof value === 'object') return [...here, ...Object.entries(value).flatMap(([k, v]) => paths(v, [...prefix, k]))];
  return here;
}

type Mutation = { op: 'replace'; value: unknown } | { op: 'delete' } | { op: 'add'; key: string; value: unknown } | { op: 'repeat'; times: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant('replace' as const), value: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom(-1, 1.5, 2 ** 60, '', 'sha256:', null, [], {})) }),
  fc.record({ op: fc.constant('delete' as const) }),
  fc.record({ op: fc.constant('add' as const), key: fc.constantFrom('manifests', 'layers', 'config', 'mediaType', 'schemaVersion', 'subject', '__proto__', 'constructor', 'x'), value: fc.jsonValue({ maxDepth: 2 }) }),
  fc.record({ op: fc.constant('repeat' as const), times: fc.integer({ min: 2, max: 50 }) }),
);

/** `doc` with `m` applied at the `index`-th path (modulo their number) */
function mutate(doc: Record<string, unknown>, index: number, m: Mutation): unknown {
  const copy = structuredClone(doc);
  const all = paths(copy);
  const path = all[index % all.length];
  if (path.length === 0) return m.op === 'replace' ? m.value : copy;
  const parent = path.slice(0, -1).reduce<any>((node, key) => node[key], copy);
  const key = path[path.length - 1];
  const target = parent[key];
  switch (m.op) {
    case 'replace':
      parent[key] = m.value;
      break;
    case 'delete':
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else delete parent[key];
      break;
    case 'add':
      if (target !== null && typeof target === 'object' && !Array.isArray(target)) Object.defineProperty(target, m.key, { value: m.value, enumerable: true, writable: true, configurable: true });
      break;
    case 'repeat':
      if (Array.isArray(parent)) parent.splice(key as number, 0, ...Array(m.times).fill(target));
      break;
  }
  return copy;
}

test('mutated manifests parse or are refused with MANIFEST_INVALID or DIGEST_INVALID', async () => {
  const contentType = fc.oneof(fc.constant(undefined), fc.constantFrom(...supportedManifestMediaTypes(), 'application/json', '', 'text/plain', 'application/vnd.oci.image.index.v1+json; charset=utf-8'));
  await fc.assert(
    fc.asyncProperty(validManifest, fc.array(fc.tuple(fc.nat(), mutation), { minLength: 1, maxLength: 3 }), contentType, async ({ doc }, mutations, type) => {
      const mutated = mutations.reduce<unknown>((d, [index, m]) => (d !== null && typeof d === 'object' && !Array.isArray(d) ? mutate(d as Record<string, unknown>, index, m) : d), doc);
      const body = Buffer.from(JSON.stringify(mutated) ?? 'null');
      const result = await outcomeAsync(() => parseManifest(type, body), MANIFEST_ERRORS);
      if ('value' in result) checkParsed(result.value);
    }),
    params(1500),
  );
});

test('random JSON and random bytes are refused with a manifest error, never a crash', async () => {
  // found by this property: stored bytes that are JSON but no object made detectMediaType throw
  for (const text of ['null', '1', '[]', '"x"']) assert.equal(detectMediaType(Buffer.from(text)), 'application/octet-stream');
  const body = fc.oneof(
    fc.jsonValue({ maxDepth: 4 }).map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
    fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
    fc.string({ unit: fc.constantFrom('{', '}', '[', ']', '"', ':', ',', 'schemaVersion', 'signatures', '1', 'null', '\\u0000', '\uFEFF', ' ') }).map((s) => Buffer.from(s)),
  );
  await fc.assert(
    fc.asyncProperty(body, fc.option(fc.constantFrom(...supportedManifestMediaTypes()), { nil: undefined }), async (bytes, type) => {
      const result = await outcomeAsync(() => parseManifest(type, bytes), MANIFEST_ERRORS);
      if ('value' in result) checkParsed(result.value);
      // what reads stored manifests never throws either
      referencesOf(bytes);
      detectMediaType(bytes);
    }),
    params(1500),
  );
});

let key: TestKey;
before(() => {
  key = generateKey('P-256');
});

const schema1 = fc.record(
  {
    schemaVersion: fc.constant(1),
    name: fc.stringMatching(/^[a-z0-9]{1,10}(\/[a-z0-9]{1,10})?$/),
    tag: fc.stringMatching(/^[a-z0-9][a-z0-9.-]{0,10}$/),
    architecture: fc.constantFrom('amd64', 'arm64'),
    layers: fc.array(fc.tuple(digest, fc.string({ maxLength: 30 })), { maxLength: 5 }),
  },
  { noNullPrototype: true },
).map(({ layers, ...rest }) => ({ ...rest, fsLayers: layers.map(([blobSum]) => ({ blobSum })), history: layers.map(([, v1Compatibility]) => ({ v1Compatibility })) }));

test('signed schema1 manifests round-trip: the payload, its digest and the fsLayers', async () => {
  await fc.assert(
    fc.asyncProperty(schema1, fc.constantFrom(undefined, MediaTypes.dockerSignedSchema1, MediaTypes.dockerSchema1), async (manifest, type) => {
      const { body, payload } = signSchema1(manifest, [{ key, kid: true }]);
      const parsed = await parseManifest(type, body);
      checkParsed(parsed);
      assert.equal(parsed.format, 'schema1');
      assert.ok(parsed.payload.equals(payload));
      assert.equal(parsed.name, manifest.name);
      assert.deepEqual(parsed.blobs.map((b) => b.digest), unique(manifest.fsLayers.map((l) => l.blobSum)));
    }),
    params(60),
  );
});

test('tampered schema1 manifests are refused with MANIFEST_UNVERIFIED or MANIFEST_INVALID', async () => {
  const tamper = fc.oneof(
    // a byte of the body changed
    fc.record({ kind: fc.constant('byte' as const), at: fc.nat(), value: fc.nat({ max: 255 }) }),
    // a field of the signature block replaced, removed or added
    fc.record({ kind: fc.constant('signature' as const), at: fc.nat(), m: mutation }),
  );
  await fc.assert(
    fc.asyncProperty(schema1, tamper, async (manifest, t) => {
      const { body } = signSchema1(manifest, [{ key }]);
      let tampered: Buffer;
      if (t.kind === 'byte') {
        tampered = Buffer.from(body);
        tampered[t.at % body.length] = t.value;
      } else {
        const doc = JSON.parse(body.toString()) as Record<string, unknown>;
        const signatures = mutate({ signatures: doc.signatures }, t.at, t.m);
        tampered = Buffer.from(JSON.stringify({ ...doc, ...(signatures as object) }));
      }
      const result = await outcomeAsync(() => parseManifest(undefined, tampered), MANIFEST_ERRORS);
      if ('value' in result) checkParsed(result.value);
    }),
    params(300),
  );
});
