/** The route table: the methods each route answers (the 405 Allow header) and the access each needs come from one entry. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allowedMethods, endpoint, requiredAccess } from '../../src/http/route-table.js';
import type { Route } from '../../src/http/routes.js';

const name = 'team/app';
const ROUTES: Route[] = [
  { kind: 'base' },
  { kind: 'catalog' },
  { kind: 'tags', name },
  { kind: 'manifest', name, reference: 'v1' },
  { kind: 'referrers', name, digest: 'sha256:x' },
  { kind: 'blob', name, digest: 'sha256:x' },
  { kind: 'uploads', name },
  { kind: 'upload', name, uuid: 'u' },
];

describe('route table', () => {
  it('lists the methods of each route in the order of the Allow header', () => {
    assert.deepEqual(Object.fromEntries(ROUTES.map((route) => [route.kind, allowedMethods(route).join(', ')])), {
      base: 'GET, HEAD',
      catalog: 'GET, HEAD',
      tags: 'GET, HEAD',
      manifest: 'GET, HEAD, PUT, DELETE',
      referrers: 'GET, HEAD',
      blob: 'GET, HEAD, DELETE',
      uploads: 'POST',
      upload: 'GET, PATCH, PUT, DELETE',
    });
  });

  it('has a handler for every allowed method and none for the others', () => {
    for (const route of ROUTES) {
      for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'constructor', 'toString']) {
        const found = endpoint(route, method);
        assert.equal(found !== undefined, allowedMethods(route).includes(method), `${method} ${route.kind}`);
        if (found) assert.equal(typeof found.handler, 'function');
        else assert.deepEqual(requiredAccess(route, method), []);
      }
    }
  });
});
