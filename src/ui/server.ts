/**
 * The web interface's paths on the main port: `/ui/` and every view below it (one HTML page; the
 * browser code draws the view its URL names), the built assets by content hash, the read-only
 * helpers under /ui/api/, and `/` for a browser: a redirect to `/ui/`. Other clients asking for `/`
 * (load balancers, monitoring) keep Distribution's empty 200.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Pages } from '../http/context.js';
import { RegistryError } from '../registry/errors.js';
import { serveAPI, type RegistryState } from './api.js';
import { indexPage, type loadAssets } from './assets.js';
import { serveSignIn, SIGN_IN_PATHS } from './sign-in.js';
import { isTokensPath, serveTokens } from './tokens.js';
import type { PageSettings } from './wire.js';

/** no inline script or style, nothing from elsewhere, never inside a frame */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const IMMUTABLE = 'public, max-age=31536000, immutable';

export function uiPages(built: Awaited<ReturnType<typeof loadAssets>>, settings: PageSettings, state: RegistryState): Pages {
  const page = built && indexPage(built.manifest, settings);
  return {
    owns(req, path) {
      if (path === '/') return (req.method === 'GET' || req.method === 'HEAD') && acceptsHTML(req);
      return path === '/ui' || path.startsWith('/ui/');
    },
    async serve(req, reply, path, services) {
      const signIn = services.auth.signIn;
      if (signIn && SIGN_IN_PATHS.has(path)) return serveSignIn(req, reply, path, signIn, settings.prefix);
      if (isTokensPath(path)) return serveTokens(req, reply, path, services);
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        reply.header('allow', 'GET, HEAD');
        throw new RegistryError('UNSUPPORTED', `${req.method} is not supported by the web interface; it changes the registry through the V2 API`);
      }
      if (path === '/' || path === '/ui') return reply.redirect(`${settings.prefix}/ui/`, 302);
      if (path.startsWith('/ui/api/')) return serveAPI(req, reply, path, services, state).catch((err: unknown) => Promise.reject(signIn ? withoutPasswordDialog(err, req) : err));
      if (!built || !page) {
        return reply.code(503).header('content-type', 'text/plain; charset=utf-8').header('cache-control', 'no-store').send('the web interface is not built: run `npm run build` in the berth checkout\n');
      }
      if (path.startsWith('/ui/assets/')) {
        const asset = built.files.get(path.slice('/ui/assets/'.length));
        if (!asset) throw new RegistryError('NOT_FOUND', `no web interface asset ${path}: the page that asked for it is older than this registry; reload it`);
        reply.header('content-type', asset.type).header('cache-control', IMMUTABLE).header('x-content-type-options', 'nosniff').header('vary', 'accept-encoding');
        if (/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) return reply.header('content-encoding', 'gzip').send(asset.gzipped);
        return reply.send(asset.body);
      }
      return securityHeaders(reply).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-cache').send(page);
    },
  };
}

function securityHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .header('x-frame-options', 'DENY');
}

/**
 * With single sign-on the page offers "Sign in" itself: a helper's 401 to a request without
 * credentials carries no Basic challenge, which would open the browser's password dialog over it.
 */
function withoutPasswordDialog(err: unknown, req: FastifyRequest): unknown {
  if (err instanceof RegistryError && err.code === 'UNAUTHORIZED' && req.headers.authorization === undefined && /^Basic\b/i.test(err.headers['www-authenticate'] ?? '')) {
    delete err.headers['www-authenticate'];
  }
  return err;
}

/** a browser navigating asks for HTML by name; curl, probes and registry clients do not */
function acceptsHTML(req: FastifyRequest): boolean {
  return /\btext\/html\b/.test(String(req.headers.accept ?? ''));
}
