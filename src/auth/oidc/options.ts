/** What the OpenID Connect sign-in reads from the configuration (auth.oidc); durations in milliseconds. */
export interface OidcOptions {
  /** the provider's issuer URL (discovery: <issuer>/.well-known/openid-configuration) */
  issuer: string;
  clientid: string;
  /** the client secret, given or read from `clientsecretfile` by the configuration */
  clientsecret?: string;
  clientsecretfile?: string;
  scopes: string[];
  /** the claim naming the user; `sub` when the provider does not send it */
  userclaim: string;
  /** the claim listing the user's groups (an array of strings, or one string) */
  groupsclaim: string;
  /** where the provider sends the browser back; undefined: <scheme>://<host><prefix>/ui/callback of the request */
  redirecturl?: string;
  /** how long a sign-in lasts */
  sessionlifetime: number;
  /** how old the session's groups may be before they are read again from the provider */
  groupsrefresh: number;
}
