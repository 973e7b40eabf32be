/**
 * Every endpoint of spec section 4 with the access it needs, for the access-control tests, and a
 * seeded storage root to run them against (an image pushed through a berth without auth).
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBerth } from './berth.js';
import { buildImage, pushImageOK, type Image } from './images.js';

export interface Endpoint {
  method: string;
  path: string;
  /** the repository action it needs; 'catalog' for registry:catalog:*, undefined for authentication only */
  needs: 'pull' | 'push' | 'delete' | 'catalog' | undefined;
  body?: Buffer<ArrayBuffer>;
  headers?: Record<string, string>;
}

const UUID = '0b6c8e8e-2b5e-4d8a-9c1e-3f0a1b2c3d4e';

export function endpoints(name: string, image: Image): Endpoint[] {
  const layer = image.blobs[image.blobs.length - 1].digest;
  return [
    { method: 'GET', path: '/v2/', needs: undefined },
    { method: 'GET', path: '/v2/_catalog', needs: 'catalog' },
    { method: 'GET', path: `/v2/${name}/tags/list`, needs: 'pull' },
    { method: 'GET', path: `/v2/${name}/manifests/latest`, needs: 'pull' },
    { method: 'HEAD', path: `/v2/${name}/manifests/latest`, needs: 'pull' },
    { method: 'PUT', path: `/v2/${name}/manifests/other`, needs: 'push', body: image.body, headers: { 'content-type': image.mediaType } },
    { method: 'DELETE', path: `/v2/${name}/manifests/sha256:${'0'.repeat(64)}`, needs: 'delete' },
    { method: 'GET', path: `/v2/${name}/blobs/${layer}`, needs: 'pull' },
    { method: 'HEAD', path: `/v2/${name}/blobs/${layer}`, needs: 'pull' },
    { method: 'DELETE', path: `/v2/${name}/blobs/sha256:${'1'.repeat(64)}`, needs: 'delete' },
    { method: 'POST', path: `/v2/${name}/blobs/uploads/`, needs: 'push' },
    { method: 'GET', path: `/v2/${name}/blobs/uploads/${UUID}`, needs: 'push' },
    { method: 'PATCH', path: `/v2/${name}/blobs/uploads/${UUID}`, needs: 'push', body: Buffer.from('abc') },
    { method: 'PUT', path: `/v2/${name}/blobs/uploads/${UUID}?digest=sha256:${'2'.repeat(64)}`, needs: 'push' },
    { method: 'DELETE', path: `/v2/${name}/blobs/uploads/${UUID}`, needs: 'push' },
    { method: 'GET', path: `/v2/${name}/referrers/${image.digest}`, needs: 'pull' },
  ];
}

export async function call(base: string, endpoint: Endpoint, authorization?: string): Promise<Response> {
  const headers: Record<string, string> = { ...endpoint.headers };
  if (authorization !== undefined) headers.authorization = authorization;
  return fetch(base + endpoint.path, { method: endpoint.method, headers, body: endpoint.body });
}

/** a storage root holding `image` under each of `names` (tag latest), written by a berth without auth */
export async function seededRoot(names: string[], image: Image = buildImage('oci-manifest', { layers: 1, layerSize: 512 })): Promise<{ root: string; image: Image }> {
  const root = await mkdtemp(join(tmpdir(), 'berth-auth-'));
  const open = await startBerth({}, { root });
  try {
    for (const name of names) await pushImageOK(open.url, name, image, 'latest');
  } finally {
    await open.stop();
  }
  return { root, image };
}

export function describeEndpoint(e: Endpoint): string {
  return `${e.method} ${e.path.split('?')[0]}`;
}
