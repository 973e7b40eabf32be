/**
 * Requests of a signed-in person: a request without an Authorization header whose cookie holds a
 * live session is decided by auth.access for the session's user and groups, as an htpasswd login
 * is for its user (the same Grant; 403 DENIED for what the rules do not give). Any other request
 * goes to the configured method unchanged: credentials sent by a client always win over a cookie.
 */
import type { RegistryError } from '../../registry/errors.js';
import type { AccessRequest } from '../access.js';
import type { AuthRequest, CallerGrant } from '../request.js';
import type { AccessPolicy } from '../policy.js';
import type { OidcSignIn } from './sign-in.js';

type Authorize = (request: AuthRequest) => Promise<CallerGrant>;

export function withSessions(
  inner: Authorize,
  signIn: OidcSignIn,
  policy: AccessPolicy,
  prefix: string,
  denial: (user: string, denied: AccessRequest[]) => RegistryError,
): Authorize {
  return async (req) => {
    if (req.authorization !== undefined || req.cookie === undefined) return inner(req);
    const session = await signIn.session(req.cookie, { protocol: req.protocol, host: req.host, prefix, address: req.address });
    if (!session) return inner(req);
    const { user, groups } = session;
    const denied = req.needed.filter((r) => !policy.allows(user, r, groups));
    if (denied.length > 0) {
      const refused = denial(user, denied);
      // the groups just read again still go back, or every request would read them again
      if (session.renewed) refused.headers['set-cookie'] = session.renewed;
      throw refused;
    }
    return {
      user,
      allows: (r) => policy.allows(user, r, groups),
      lists: (name) => policy.allows(user, { type: 'repository', name, action: 'pull' }, groups),
      setCookie: session.renewed,
      groups: [...groups],
    };
  };
}
