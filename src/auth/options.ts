/**
 * What authentication reads from the configuration (auth, ratelimit), as auth's own types:
 * the composition root passes the validated configuration's slices, and the compiler checks that
 * they fit. Durations are in milliseconds.
 */
export interface HtpasswdOptions {
  realm: string;
  path: string;
}

export interface TokenOptions {
  realm?: string;
  service: string;
  issuer: {
    name?: string;
    enabled: boolean;
    signingkey?: string;
    expiration: number;
    refreshexpiration: number;
  };
  rootcertbundle?: string;
  jwks?: string;
  autoredirect: boolean;
  autoredirectpath: string;
}

import type { FederatedIssuerOptions } from './federation-rules.js';
import type { AccessRules } from './policy.js';
import type { OidcOptions } from './oidc/options.js';

export interface AuthOptions {
  auth?: { htpasswd?: HtpasswdOptions; token?: TokenOptions; oidc?: OidcOptions; access?: AccessRules; federation?: FederatedIssuerOptions[]; failedlogins: { burst: number; every: number } };
  ratelimit?: { rate: number; burst: number; by: 'ip' | 'user' };
  /** http.prefix without its trailing slash ('' for none): where the token issuer's path lives */
  prefix: string;
}
