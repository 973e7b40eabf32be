/**
 * The Basic credentials of an Authorization header. A module of its own, without jose: the edge's
 * audit and token handler read it on every server, the token issuer only where configured
 * (auth/index.ts loads the credential checkers when the configuration names them).
 */

/** `Basic base64(user:password)` -> parts; undefined when malformed */
export function parseBasic(header: string): { user: string; password: string } | undefined {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m) return undefined;
  const text = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0) return undefined;
  return { user: text.slice(0, colon), password: text.slice(colon + 1) };
}
