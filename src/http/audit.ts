/**
 * What the edge tells the audit log (src/audit/): the writes it reports (push, mount, delete),
 * sign-ins at the token issuer and failed ones anywhere, and every request refused by an access
 * rule or a policy (403, and 401 to a request that carried credentials). Never awaited, never
 * throws: `record` only queues. Who: the authenticated user, else the user name a refused request
 * claimed (Basic), else the subject of the token whose scope fell short. Where: the socket's
 * address as Fastify sees it (`req.ip`), not a client-chosen X-Forwarded-For.
 */
import type { FastifyRequest } from 'fastify';
// jose's subpath: its index would bring all of jose into the chunk every server loads (src/server-bundle.ts)
import { decodeJwt } from 'jose/jwt/decode';
import type { AuditRecord } from '../audit/record.js';
import { parseBasic } from '../auth/basic.js';
import type { EventAction, EventTarget } from '../notifications/events.js';
import type { RegistryError } from '../registry/errors.js';
import type { Services } from './context.js';
import { statusOf } from './errors.js';
import { userOf } from './grants.js';
import { matchRoute } from './routes.js';

type Recorded = Omit<AuditRecord, 'actor' | 'address'>;

function record(req: FastifyRequest, services: Pick<Services, 'audit'>, actor: string | undefined, what: Recorded): void {
  services.audit?.record({ actor, address: req.ip, ...what });
}

/** a write the edge reports as an event (pulls are not recorded); `what`: the target's kind */
export function auditWrite(req: FastifyRequest, services: Pick<Services, 'audit'>, action: EventAction, target: EventTarget, what: 'manifest' | 'blob'): void {
  if (!services.audit || action === 'pull') return;
  const user = userOf(req);
  const size = target.size !== undefined ? `, ${target.size} bytes` : '';
  if (action === 'push') {
    const detail = what === 'manifest' ? `manifest ${target.digest} (${target.mediaType}${size})` : `blob${size}`;
    record(req, services, user, { action, repository: target.repository, target: target.tag ?? target.digest, outcome: 'ok', detail });
  } else if (action === 'mount') {
    record(req, services, user, { action, repository: target.repository, target: target.digest, outcome: 'ok', detail: `from ${target.fromRepository}${size}` });
  } else {
    record(req, services, user, { action, repository: target.repository, target: target.digest, outcome: 'ok' });
  }
}

/** a token the built-in issuer gave a user who signed in (anonymous tokens are not recorded) */
export function auditSignIn(req: FastifyRequest, services: Pick<Services, 'audit'>, user: string | undefined): void {
  if (user !== undefined) record(req, services, user, { action: 'sign-in', target: 'token', outcome: 'ok' });
}

/** a sign-in refused (wrong password, bad token or refresh token) */
export function auditFailedSignIn(req: FastifyRequest, services: Pick<Services, 'audit'>, user: string | undefined, detail: string): void {
  record(req, services, user, { action: 'sign-in', outcome: 'failed', detail });
}

/**
 * a request refused: 403 or DENIED (an access rule or a policy) is `deny`; 401 to a request with credentials
 * is a failed sign-in, or `deny` when a valid token's scope fell short. 401 without credentials is
 * the ordinary challenge every client meets first: not recorded.
 */
export function auditRefusal(req: FastifyRequest, services: Pick<Services, 'audit' | 'options'>, err: RegistryError): void {
  if (!services.audit) return;
  const status = statusOf(err);
  const authorization = req.headers.authorization;
  const denied = status === 403 || err.code === 'DENIED';
  if (!denied && (status !== 401 || authorization === undefined)) return;
  const insufficient = /error="insufficient_scope"/.test(err.headers['www-authenticate'] ?? '');
  const actor = userOf(req) ?? claimedUser(authorization, insufficient);
  if (!denied && !insufficient) return auditFailedSignIn(req, services, actor, err.message);
  record(req, services, actor, { action: 'deny', ...requestTarget(req, services.options.prefix), outcome: 'denied', detail: `${req.method} ${err.message}` });
}

/** the user name in Basic credentials; a token's subject only when the token was valid (its scope fell short) */
function claimedUser(authorization: string | undefined, tokenValid: boolean): string | undefined {
  if (authorization === undefined) return undefined;
  const basic = parseBasic(authorization);
  if (basic) return basic.user;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!bearer || !tokenValid) return undefined;
  try {
    const sub = decodeJwt(bearer[1]).sub;
    return sub === '' ? undefined : sub;
  } catch {
    return undefined;
  }
}

/** the repository and the reference, digest or upload the request's path names */
function requestTarget(req: FastifyRequest, prefix: string): Pick<AuditRecord, 'repository' | 'target'> {
  const raw = req.url.split('?')[0];
  const path = prefix && raw.startsWith(prefix + '/') ? raw.slice(prefix.length) : raw;
  let route;
  try {
    route = matchRoute(path);
  } catch {
    return { target: path };
  }
  if (!route || !('name' in route)) return { target: path };
  const target = 'reference' in route ? route.reference : 'digest' in route ? route.digest : 'uuid' in route ? route.uuid : undefined;
  return target === undefined ? { repository: route.name } : { repository: route.name, target };
}
