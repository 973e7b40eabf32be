/**
 * The `_state` token carried in upload URLs: which upload this is and when it started, signed with
 * http.secret so that a URL cannot be forged or pointed at another repository's upload. Instances
 * that share the secret accept each other's URLs.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { isAlgorithm, type Algorithm } from '../registry/digest.js';

export interface UploadState {
  name: string;
  uuid: string;
  /**
   * bytes the upload held when the URL was issued: a PATCH or PUT with bytes and no Content-Range
   * must start there (a request sent again after its bytes were stored does not: 416)
   */
  offset: number;
  startedAt: string;
  /** the running hash's algorithm (the POST's `digest-algorithm`); absent in URLs of older versions: sha256 */
  algorithm?: Algorithm;
}

export class UploadStateSigner {
  constructor(private readonly secret: string) {}

  pack(state: UploadState): string {
    const payload = Buffer.from(JSON.stringify(state)).toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /** the state in `token`, or undefined when it is malformed or not signed with our secret */
  unpack(token: string | undefined): UploadState | undefined {
    if (!token) return undefined;
    const dot = token.indexOf('.');
    if (dot < 0) return undefined;
    const payload = token.slice(0, dot);
    const given = Buffer.from(token.slice(dot + 1));
    const expected = Buffer.from(this.mac(payload));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    try {
      const state = JSON.parse(Buffer.from(payload, 'base64url').toString()) as UploadState;
      const valid = typeof state.name === 'string' && typeof state.uuid === 'string' && (state.algorithm === undefined || isAlgorithm(state.algorithm));
      return valid ? state : undefined;
    } catch {
      return undefined;
    }
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.secret).update(payload).digest('base64url');
  }
}
