/** Test data and small HTTP helpers for pushing blobs the way clients do. */
import { request } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';

export function sha256(data: Buffer | string): string {
  return digestOf('sha256', data);
}

export function sha512(data: Buffer | string): string {
  return digestOf('sha512', data);
}

export function digestOf(algorithm: 'sha256' | 'sha384' | 'sha512', data: Buffer | string): string {
  return `${algorithm}:${createHash(algorithm).update(data).digest('hex')}`;
}

/** random bytes (typed over a plain ArrayBuffer, which fetch accepts as a body) */
export function randomBlob(size: number): { data: Buffer<ArrayBuffer>; digest: string } {
  const data = Buffer.from(randomBytes(size));
  return { data, digest: sha256(data) };
}

/**
 * pushes `data` to `name` monolithically (POST then PUT ?digest=), returning the PUT response; a
 * digest of another algorithm than sha256 is announced on the POST (`digest-algorithm`, OCI)
 */
export async function pushBlob(base: string, name: string, data: Buffer<ArrayBuffer>, digest = sha256(data)): Promise<Response> {
  const algorithm = digest.slice(0, digest.indexOf(':'));
  const query = algorithm === 'sha256' ? '' : `?digest-algorithm=${algorithm}`;
  const start = await fetch(`${base}/v2/${name}/blobs/uploads/${query}`, { method: 'POST' });
  if (start.status !== 202) throw new Error(`POST upload answered ${start.status}: ${await start.text()}`);
  const location = new URL(start.headers.get('location')!, base);
  location.searchParams.append('digest', digest);
  return fetch(location, { method: 'PUT', body: data, headers: { 'content-type': 'application/octet-stream' } });
}

/** the parsed JSON error body of a response, asserting its shape */
export async function errorCodes(res: Response): Promise<string[]> {
  const body = (await res.json()) as { errors: { code: string; message: string }[] };
  return body.errors.map((e) => e.code);
}

/** a request whose path is sent exactly as given (no URL normalisation) */
export function rawRequest(base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
