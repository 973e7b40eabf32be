/**
 * Sealed cookie values: JSON encrypted and authenticated with AES-256-GCM under a key derived from
 * the registry's shared secret (http.secret, or the one kept in storage), so every instance reads
 * the cookies of the others and nobody else can read or forge them. The cookie's name is bound in,
 * so the value of one cookie is never accepted as another. The session holds the refresh token,
 * which is why it is encrypted and not only signed.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

export class Sealer {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = Buffer.from(hkdfSync('sha256', secret, 'berth', 'berth oidc cookies', 32));
  }

  seal(name: string, value: unknown): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv).setAAD(Buffer.from(name));
    const body = Buffer.concat([cipher.update(JSON.stringify(value)), cipher.final()]);
    return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
  }

  /** the value sealed under `name`, or undefined for anything else (tampered, another key, another cookie) */
  open(name: string, sealed: string | undefined): unknown {
    if (!sealed) return undefined;
    const bytes = Buffer.from(sealed, 'base64url');
    if (bytes.length < IV_BYTES + TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES)).setAAD(Buffer.from(name));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      const text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]);
      return JSON.parse(text.toString());
    } catch {
      return undefined;
    }
  }
}

/** the value of cookie `name` in a Cookie header */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export interface CookieAttributes {
  path: string;
  /** seconds; 0 clears the cookie */
  maxAge: number;
  secure: boolean;
}

/** a Set-Cookie value: HttpOnly and SameSite=Lax always (the provider's redirect back is a top-level GET) */
export function setCookie(name: string, value: string, { path, maxAge, secure }: CookieAttributes): string {
  return `${name}=${value}; Path=${path}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}
