// Free TCP ports for test servers.

import { createServer } from 'node:net';

/**
 * The WHATWG Fetch "bad ports" list (https://fetch.spec.whatwg.org/#port-blocking).
 * Node's fetch (undici) refuses these with "bad port", so a test server must never listen on one.
 */
export const BAD_PORTS: ReadonlySet<number> = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102,
  103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465,
  512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993,
  995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668,
  6669, 6679, 6697, 10080,
]);

/** True if Node's fetch would refuse to connect to this port. */
export function isBadPort(port: number): boolean {
  return BAD_PORTS.has(port);
}

function bindEphemeral(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen({ host, port: 0, exclusive: true }, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}

/**
 * A port that was free on 127.0.0.1 a moment ago (the OS picked it for a listen on port 0),
 * never one of BAD_PORTS. There is an inherent race until the caller binds it; callers that
 * spawn servers should be ready to retry on "address in use".
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await bindEphemeral(host);
    if (port > 0 && !BAD_PORTS.has(port)) return port;
  }
  throw new Error(`freePort: could not get a usable ephemeral port on ${host}`);
}
