/**
 * A sign-in that did not succeed (sign-in.ts throws it, the web interface answers it). A module of
 * its own, without openid-client: the web interface imports it on every server, the sign-in only
 * with auth.oidc (auth/index.ts loads it then).
 */

/** a sign-in that did not succeed: the message is for the person in front of the browser */
export class SignInError extends Error {
  /** Set-Cookie values for the answer (the flow's cookie cleared) */
  cookies: string[] = [];
}
