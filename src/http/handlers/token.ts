/**
 * The built-in token issuer's endpoint (GET and POST on auth.token.autoredirectpath, default
 * /auth/token). A POST refused for its grant answers as OAuth2 asks (`error`, `error_description`)
 * and as Distribution's clients read errors (`errors`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InvalidGrant, TokenRequestError, type TokenIssuer } from '../../auth/issuer.js';
import { RegistryError } from '../../registry/errors.js';
import { noteError } from '../access-log.js';
import { withStatus } from '../errors.js';
import { readSmallBody } from '../body.js';

const FORM_LIMIT = 64 * 1024;

export async function serveTokenRequest(req: FastifyRequest, reply: FastifyReply, issuer: TokenIssuer): Promise<unknown> {
  let response;
  if (req.method === 'GET') {
    const query = new URLSearchParams(req.url.slice(req.url.indexOf('?') + 1 || req.url.length));
    response = await issuer.fromBasic(query, req.headers.authorization, req.ip).catch(badRequest);
  } else if (req.method === 'POST') {
    const type = String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') {
      throw new RegistryError('UNSUPPORTED', 'POST a form (application/x-www-form-urlencoded) with grant_type=password or refresh_token', { status: 400 });
    }
    const body = await readSmallBody(req, FORM_LIMIT, () => new RegistryError('UNSUPPORTED', `token request form over ${FORM_LIMIT} bytes`, { status: 413 }));
    try {
      response = await issuer.fromForm(new URLSearchParams(body.toString('utf8')), req.ip);
    } catch (err) {
      if (!(err instanceof InvalidGrant)) return badRequest(err);
      noteError(req, err);
      const answer = { error: 'invalid_grant', error_description: err.message, errors: err.entries() };
      return reply.code(400).header('content-type', 'application/json; charset=utf-8').header('cache-control', 'no-store').send(JSON.stringify(answer));
    }
  } else {
    reply.header('allow', 'GET, POST');
    throw new RegistryError('UNSUPPORTED', `${req.method} is not supported on the token endpoint; allowed: GET, POST`);
  }
  return reply.header('content-type', 'application/json; charset=utf-8').header('cache-control', 'no-store').send(JSON.stringify(response));
}

/** a token request the issuer found wrong is answered 400 */
function badRequest(err: unknown): never {
  throw err instanceof TokenRequestError ? withStatus(err, 400) : err;
}
