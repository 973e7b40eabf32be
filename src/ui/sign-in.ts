/**
 * The web interface's single sign-on paths (auth.oidc; src/auth/oidc/ does the work):
 * `GET /ui/signin?return=PATH` sends the browser to the OpenID Provider, `GET /ui/callback` is
 * where it comes back (the session cookie is set, then the page it started from), `POST
 * /ui/signout` ends the session in this browser (a POST: a link on another site cannot sign
 * anybody out, and the edge refuses a POST from a foreign Origin).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { OidcSignIn, Where } from '../auth/oidc/sign-in.js';
import { SignInError } from '../auth/oidc/sign-in-error.js';
import { queryValue } from '../http/body.js';
import { RegistryError } from '../registry/errors.js';

export const SIGN_IN_PATHS = new Set(['/ui/signin', '/ui/callback', '/ui/signout']);

export async function serveSignIn(req: FastifyRequest, reply: FastifyReply, path: string, signIn: OidcSignIn, prefix: string): Promise<unknown> {
  const where: Where = { protocol: req.protocol, host: req.host, prefix, address: req.ip };
  const method = path === '/ui/signout' ? 'POST' : 'GET';
  if (req.method !== method && !(method === 'GET' && req.method === 'HEAD')) {
    reply.header('allow', method === 'GET' ? 'GET, HEAD' : 'POST');
    throw new RegistryError('UNSUPPORTED', `${req.method} is not supported on ${prefix}${path}; use ${method}`);
  }
  reply.header('cache-control', 'no-store');
  if (path === '/ui/signout') return reply.header('set-cookie', signIn.signOut(where)).redirect(`${prefix}/ui/`, 303);
  try {
    if (path === '/ui/signin') {
      const { location, cookie } = await signIn.begin(where, queryValue(req, 'return') ?? `${prefix}/ui/`);
      return reply.header('set-cookie', cookie).redirect(location, 302);
    }
    const query = req.url.includes('?') ? req.url.slice(req.url.indexOf('?')) : '';
    const { back, cookies } = await signIn.finish(where, query, req.headers.cookie);
    return reply.header('set-cookie', cookies).redirect(back, 302);
  } catch (err) {
    if (!(err instanceof SignInError)) throw err;
    if (err.cookies.length > 0) reply.header('set-cookie', err.cookies);
    return reply
      .code(path === '/ui/signin' ? 502 : 400)
      .header('content-type', 'text/plain; charset=utf-8')
      .header('x-content-type-options', 'nosniff')
      .send(`Sign-in failed: ${err.message}\n\nStart again: ${prefix}/ui/signin\n`);
  }
}
