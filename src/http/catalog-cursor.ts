/**
 * The `last` of a filtered catalog page that stopped at its scan budget before it was full: the
 * name it stopped at may be one the caller may not see, so it travels sealed (AES-256-GCM under a
 * key derived from http.secret, so every instance opens what another sealed). A sealed cursor
 * starts with `~`, which no repository name contains and which sorts after every name: anything
 * that starts with it and does not open reads as a plain `last` past the end (an empty page).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const MARK = '~';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class CatalogCursors {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = Buffer.from(hkdfSync('sha256', secret, 'berth', 'catalog cursor', 32));
  }

  seal(name: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const sealed = Buffer.concat([iv, cipher.update(name, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return MARK + sealed.toString('base64url');
  }

  /** the name inside a sealed cursor; `last` itself when it is not one (a name, or a cursor that does not open) */
  open(last: string): string {
    if (!last.startsWith(MARK)) return last;
    const sealed = Buffer.from(last.slice(MARK.length), 'base64url');
    if (sealed.length < IV_BYTES + TAG_BYTES) return last;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.subarray(0, IV_BYTES));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      return last;
    }
  }
}
