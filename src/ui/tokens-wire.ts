/**
 * The shapes of the tokens helpers (ui/tokens.ts) as the browser reads them (types only, no
 * imports: the server's and the client's tsconfig both compile this file).
 */

/** an API token as listed: never its secret */
export interface TokenRow {
  name: string;
  repositories: string[];
  actions: string[];
  owner?: string;
  created: string;
  expires?: string;
  revoked?: string;
  lastUsed?: string;
  state: 'active' | 'expired' | 'revoked';
}

/** GET /ui/api/tokens */
export interface TokenList {
  user: string;
  tokens: TokenRow[];
}

/** POST /ui/api/tokens: the secret, shown this once */
export interface CreatedToken {
  token: TokenRow;
  secret: string;
}

/** the body of POST /ui/api/tokens; expires in days (absent: never) */
export interface NewTokenRequest {
  name: string;
  repositories: string[];
  actions: string[];
  expires?: number;
}
