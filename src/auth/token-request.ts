/**
 * The token issuer's (issuer.ts) refusals of a token request, which the edge (http/handlers/token.ts)
 * tells apart. A module of its own, without jose: the edge imports it on every server.
 */
import { RegistryError } from '../registry/errors.js';

/** a token request that is itself wrong (a grant type or service this issuer does not serve): the edge answers 400 */
export class TokenRequestError extends RegistryError {}

/**
 * A POST whose password or refresh token is wrong: `invalid_grant` (RFC 6749 5.2, a 400), the
 * registry's UNAUTHORIZED entry beside it for clients that read Distribution's error body
 */
export class InvalidGrant extends TokenRequestError {
  constructor(message: string) {
    super('UNAUTHORIZED', message);
  }
}
