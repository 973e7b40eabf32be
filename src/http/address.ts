/** Listen addresses in Go's notation, as Distribution's configuration writes them. */

/** ':5000' listens on every interface, as Go's listeners do; '[::1]:5000' and '127.0.0.1:5000' on one */
export function parseAddr(addr: string): { host: string; port: number } {
  const colon = addr.lastIndexOf(':');
  const host = addr.slice(0, colon).replace(/^\[|\]$/g, '');
  return { host: host === '' ? '::' : host, port: Number(addr.slice(colon + 1)) };
}
