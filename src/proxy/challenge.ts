/** The WWW-Authenticate challenge of an upstream's 401: `Basic realm=...` or `Bearer realm=...,service=...,scope=...`. */

export interface Challenge {
  scheme: 'basic' | 'bearer';
  params: Record<string, string>;
}

/** the first Basic or Bearer challenge in the header, undefined for none */
export function parseChallenge(header: string | null): Challenge | undefined {
  const match = header ? /^\s*(Basic|Bearer)\b(.*)$/i.exec(header) : null;
  if (!match) return undefined;
  const params: Record<string, string> = {};
  for (const [, key, quoted, bare] of match[2].matchAll(/([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g)) {
    params[key.toLowerCase()] = quoted !== undefined ? quoted.replace(/\\(.)/g, '$1') : bare;
  }
  return { scheme: match[1].toLowerCase() as Challenge['scheme'], params };
}
