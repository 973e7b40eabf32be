/**
 * The built-in token issuer's endpoint (GET and POST on auth.token.autoredirectpath, default
 * /auth/token). A POST refused for its grant answers as OAuth2 asks (`error`, `error_description`)
 * and as Distribution's clients read errors (`errors`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
// jose's subpath: its index would bring all of jose into the chunk every server loads (src/server-bundle.ts)
import { decodeJwt } from 'jose/jwt/decode';
import type { TokenIssuer } from '../../auth/issuer.js';
import { parseBasic } from '../../auth/basic.js';
import { InvalidGrant, TokenRequestError } from '../../auth/token-request.js';
import { RegistryError } from '../../registry/errors.js';
import { noteError } from '../access-log.js';
import { withStatus } from '../errors.js';
import { readSmallBody } from '../body.js';
import { auditFailedSignIn, auditSignIn } from '../audit.js';
import type { Services } from '../context.js';

const FORM_LIMIT = 64 * 1024;

/** `services.audit` is told of each sign-in (a token for a user) and each refused password or refresh token */
export async function serveTokenRequest(req: FastifyRequest, reply: FastifyReply, issuer: TokenIssuer, services: Pick<Services, 'audit'>): Promise<unknown> {
  let response;
  if (req.method === 'GET') {
    const query = new URLSearchParams(req.url.slice(req.url.indexOf('?') + 1 || req.url.length));
    // wrong Basic credentials throw 401 UNAUTHORIZED, which the edge records as a failed sign-in
    response = await issuer.fromBasic(query, req.headers.authorization, req.ip).catch(badRequest);
    auditSignIn(req, services, req.headers.authorization !== undefined ? parseBasic(req.headers.authorization)?.user : undefined);
  } else if (req.method === 'POST') {
    const type = String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') {
      throw new RegistryError('UNSUPPORTED', 'POST a form (application/x-www-form-urlencoded) with grant_type=password or refresh_token', { status: 400 });
    }
    const body = await readSmallBody(req, FORM_LIMIT, () => new RegistryError('UNSUPPORTED', `token request form over ${FORM_LIMIT} bytes`, { status: 413 }));
    const form = new URLSearchParams(body.toString('utf8'));
    try {
      response = await issuer.fromForm(form, req.ip);
      auditSignIn(req, services, formUser(form));
    } catch (err) {
      if (!(err instanceof InvalidGrant)) return badRequest(err);
      noteError(req, err);
      auditFailedSignIn(req, services, form.get('grant_type') === 'password' ? (form.get('username') ?? undefined) : undefined, err.message);
      const answer = { error: 'invalid_grant', error_description: err.message, errors: err.entries() };
      return reply.code(400).header('content-type', 'application/json; charset=utf-8').header('cache-control', 'no-store').send(JSON.stringify(answer));
    }
  } else {
    reply.header('allow', 'GET, POST');
    throw new RegistryError('UNSUPPORTED', `${req.method} is not supported on the token endpoint; allowed: GET, POST`);
  }
  return reply.header('content-type', 'application/json; charset=utf-8').header('cache-control', 'no-store').send(JSON.stringify(response));
}

/** the user of a granted form: its username, or the subject of the refresh token the issuer just verified */
function formUser(form: URLSearchParams): string | undefined {
  if (form.get('grant_type') === 'password') return form.get('username') ?? undefined;
  try {
    return decodeJwt(form.get('refresh_token') ?? '').sub;
  } catch {
    return undefined;
  }
}

/** a token request the issuer found wrong is answered 400 */
function badRequest(err: unknown): never {
  throw err instanceof TokenRequestError ? withStatus(err, 400) : err;
}
