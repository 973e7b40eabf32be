/** What authentication is asked about one request, and what it answers (auth/index.ts `authorize`). */
import type { AccessRequest, Grant } from './access.js';

export interface AuthRequest {
  /** what the request needs (the edge computes it from the route and method; empty for `GET /v2/`) */
  needed: AccessRequest[];
  authorization: string | undefined;
  /** the Cookie header (a web interface session, with auth.oidc) */
  cookie?: string;
  /** the client's address (failed logins are limited per address too) */
  address: string;
  /** the `from` of a mount (POST .../blobs/uploads/?mount=&from=): its pull goes into challenges */
  mountFrom?: string;
  /** for autoredirect realms: the scheme and Host the client used */
  protocol: string;
  host: string;
}

/** a Grant that also decides which repositories the catalog shows */
export interface CallerGrant extends Grant {
  /** may `name` appear in this caller's catalog? */
  lists(name: string): boolean;
  /** a Set-Cookie for the response: the session, its groups read again from the provider */
  setCookie?: string;
  /** a signed-in person's groups (auth.oidc): an API token they create keeps them */
  groups?: string[];
  /** the caller is an API token (which may not manage API tokens) */
  apiToken?: boolean;
}
