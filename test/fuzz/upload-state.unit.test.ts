/**
 * Property tests (issue 18) of the `_state` token of upload URLs (src/http/upload-state.ts), which
 * clients send back on every PATCH and PUT: a state packed by the registry unpacks to itself; any
 * other text, or a packed state with one character changed, unpacks to nothing (the edge answers
 * BLOB_UPLOAD_INVALID), never an exception.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { UploadStateSigner, type UploadState } from '../../src/http/upload-state.js';
import { params } from './fuzz.js';

const signer = new UploadStateSigner('fuzz-secret');
const state: fc.Arbitrary<UploadState> = fc.record(
  {
    name: fc.string({ maxLength: 30 }),
    uuid: fc.uuid(),
    offset: fc.nat(),
    startedAt: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    algorithm: fc.constantFrom('sha256', 'sha384', 'sha512' as const),
  },
  { requiredKeys: ['name', 'uuid', 'offset', 'startedAt'], noNullPrototype: true },
);

test('upload state: what the registry packs unpacks to itself; a changed character to nothing', () => {
  fc.assert(
    fc.property(state, fc.nat(), fc.constantFrom(...'Aa0_-.='), (s, at, c) => {
      const token = signer.pack(s);
      assert.deepEqual(signer.unpack(token), s);
      const i = at % token.length;
      fc.pre(token[i] !== c);
      const changed = `${token.slice(0, i)}${c}${token.slice(i + 1)}`;
      // the last base64url character of the MAC carries padding bits: a change there may decode alike
      fc.pre(i < token.length - 1);
      assert.equal(signer.unpack(changed), undefined, changed);
    }),
    params(500),
  );
});

test('upload state: any other text unpacks to nothing', () => {
  const forged = fc.jsonValue({ maxDepth: 2 }).map((v) => {
    const payload = Buffer.from(JSON.stringify(v) ?? '').toString('base64url');
    return `${payload}.${'A'.repeat(43)}`;
  });
  fc.assert(
    fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 80 }), forged, fc.constantFrom('', '.', '..', 'a.b')), (token) => {
      assert.equal(signer.unpack(token), undefined);
    }),
    params(500),
  );
  assert.equal(signer.unpack(undefined), undefined);
});

test('upload state: a signed payload of any JSON shape unpacks to a state with a name and an id, or to nothing', () => {
  // a registry with the same secret signed it (another instance or version): its shape is still checked
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 2 }), (value) => {
      const unpacked = signer.unpack(signer.pack(value as unknown as UploadState));
      if (unpacked !== undefined) assert.ok(typeof unpacked.name === 'string' && typeof unpacked.uuid === 'string');
    }),
    params(500),
  );
});
