/**
 * The HTTP edge: a Fastify server with one catch-all route, our own matcher for `/v2/<name>/...`
 * paths, raw request streams for blob bodies, the JSON error body everywhere, an access log line
 * per request, and the Docker-* twin of every Registry-* header.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { RegistryError } from '../registry/errors.js';
import { isStorageFull, StorageUnavailableError } from '../storage/driver.js';
import { UpstreamError } from '../proxy/errors.js';
import type { Services } from './context.js';
import type { EdgeOptions } from './options.js';
import { accessLogFields, exchangeBytes, noteError } from './access-log.js';
import { sendError } from './errors.js';
import { queryValue, setAsideUnparsableContentType } from './body.js';
import { isRepositoryName } from '../registry/names.js';
import { auditRefusal } from './audit.js';
import { authorizeRequest, limit } from './authorize.js';
import { grantSetCookie } from './grants.js';
import { serveTokenRequest } from './handlers/token.js';
import { isProbe, refuseWhileUnhealthy, serveProbe } from './handlers/probes.js';
import { allowedMethods, endpoint } from './route-table.js';
import { matchRoute, type Route } from './routes.js';
import { addDockerTwins, API_VERSION, API_VERSION_HEADER } from './wire-names.js';
import { answerClientError, bodyLeftUnread, gateConnections, refusalLog, serverTimeouts, sweepInterval, watchBodyRate } from './limits.js';
import { noSchemaCompilers } from './no-schemas.js';
import { refuseForeignOrigin } from './origin.js';

/** key material for TLS, read by the app from http.tls */
export interface TLSOptions {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer[];
  requestCert?: boolean;
  rejectUnauthorized?: boolean;
  minVersion: 'TLSv1.2' | 'TLSv1.3';
}

/** the route kind each request matched, for the request metrics */
const routeKinds = new WeakMap<FastifyRequest, string>();

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function buildServer(services: Services, logger: FastifyBaseLogger, tls?: TLSOptions): FastifyInstance {
  const { options: edge } = services;
  const options = {
    loggerInstance: logger,
    // one access-log line per request is written below instead of Fastify's two
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: (req: { headers: Record<string, string | string[] | undefined> }) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // names are matched on the raw path; Fastify must not reject or rewrite unusual ones
    routerOptions: { ignoreDuplicateSlashes: false, maxParamLength: 1024 },
    ...serverTimeouts(edge.limits),
    clientErrorHandler: (err: Error, socket: Socket) => answerClientError(err, socket, edge.limits),
    // a path Fastify cannot decode (`/v2/a%zz/tags/list`) would get Fastify's own 400 before any
    // hook: it goes through the registry's matcher instead, which reads raw paths (NAME_INVALID, 404)
    frameworkErrors: (err: Error, req: FastifyRequest, reply: FastifyReply) => {
      setCommonHeaders(req, reply, edge.headers);
      addDockerTwins(reply);
      if ((err as { code?: string }).code !== 'FST_ERR_BAD_URL') return handleError(err, req, reply, services);
      return dispatch(req, reply, services, edge.prefix).then(
        (answer) => answer,
        (failure: unknown) => handleError(failure, req, reply, services),
      );
    },
    schemaController: noSchemaCompilers,
  };
  // with TLS: HTTP/2, and HTTP/1.1 for clients that do not offer h2 (ALPN). Fastify types an h2
  // server apart; the handlers only use what both request kinds have (headers, url, the raw stream)
  const app = tls
    ? (Fastify({ ...(options as object), http2: true, https: { allowHTTP1: true, handshakeTimeout: edge.limits.headerTimeoutMs, ...tls } }) as unknown as FastifyInstance)
    : Fastify(options);
  if (tls) {
    // the HTTP/1.1 side of the HTTP/2 server takes none of the options above: set them on it
    Object.assign(app.server, { headersTimeout: edge.limits.headerTimeoutMs, requestTimeout: 0, connectionsCheckingInterval: sweepInterval(edge.limits) });
  }
  gateConnections(app.server, edge.limits, !tls, refusalLog((fields, message) => logger.warn(fields, message), edge.limits.connections));

  // bodies stay unread streams: blob data goes straight from the socket to storage
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));

  app.addHook('onRequest', async (req, reply) => {
    setAsideUnparsableContentType(req);
    watchBodyRate(req.raw as IncomingMessage, edge.limits.bodyRate, (bytes) =>
      req.log.warn({ bytes, windowMs: edge.limits.bodyRate.windowMs }, 'request body slower than http.limits.bodyrate.minimum: connection closed'),
    );
    setCommonHeaders(req, reply, edge.headers);
  });
  app.addHook('onSend', async (req, reply, payload) => {
    addDockerTwins(reply);
    // a web interface session whose groups were read again goes back to the browser
    const renewed = grantSetCookie(req);
    if (renewed) reply.header('set-cookie', renewed);
    if (bodyLeftUnread(req.raw as IncomingMessage)) reply.header('connection', 'close');
    return payload;
  });
  const metrics = services.requestMetrics;
  if (metrics?.requestStarted) {
    const started = metrics.requestStarted.bind(metrics);
    app.addHook('onRequest', async (req, reply) => {
      const kind = routeKindOf(req.url, edge.prefix);
      // 'close' comes once whether the response ended or the client went away
      if (kind) reply.raw.once('close', started(kind));
    });
  }
  if (metrics || edge.accessLog) {
    app.addHook('onResponse', async (req, reply) => {
      const bytes = exchangeBytes(req, reply);
      metrics?.observeRequest(req.method, routeKinds.get(req) ?? 'unknown', reply.statusCode, reply.elapsedTime / 1000, bytes.read, bytes.written);
      if (edge.accessLog) req.log.info(accessLogFields(req, reply, bytes), 'request');
    });
  }

  const { prefix } = edge;
  app.route({ method: [...ALL_METHODS], url: '*', handler: (req, reply) => dispatch(req, reply, services, prefix) });
  app.setNotFoundHandler((req, reply) => dispatch(req, reply, services, prefix));
  app.setErrorHandler((err, req, reply) => handleError(err, req, reply, services));
  return app;
}

/** the headers of every answer: the request id, the API version, http.headers */
function setCommonHeaders(req: FastifyRequest, reply: FastifyReply, configured: EdgeOptions['headers']): void {
  reply.header('x-request-id', req.id);
  reply.header(API_VERSION_HEADER, API_VERSION);
  for (const [name, values] of Object.entries(configured)) reply.header(name, values.join(', '));
}

/** the kind of route `url` names below `prefix`, for metrics taken before dispatch; undefined for none or an invalid name */
function routeKindOf(url: string, prefix: string): string | undefined {
  const rawPath = url.split('?')[0];
  const path = prefix && rawPath.startsWith(prefix + '/') ? rawPath.slice(prefix.length) : rawPath;
  try {
    return matchRoute(path)?.kind;
  } catch {
    return undefined;
  }
}

async function dispatch(req: FastifyRequest, reply: FastifyReply, services: Services, prefix: string): Promise<unknown> {
  refuseForeignOrigin(req, services.urls, services.options.headers);
  const rawPath = req.url.split('?')[0];
  // the API, the token issuer and the web interface answer only under http.prefix (as Distribution);
  // outside it only the probes and the redirect from / to the web interface
  const underPrefix = !prefix || rawPath.startsWith(prefix + '/');
  const path = underPrefix ? rawPath.slice(prefix.length) : rawPath;
  const page = (underPrefix || path === '/') && services.pages?.owns(req, path) === true;
  if (!page && (req.method === 'GET' || req.method === 'HEAD') && isProbe(rawPath)) return serveProbe(rawPath, reply, services);
  refuseWhileUnhealthy(services);
  const { auth } = services;
  if (auth.limiter && auth.limitBy === 'ip') await limit(auth, req.ip);
  if (page) return services.pages!.serve(req, reply, path, services);
  if (auth.issuer && underPrefix && path === auth.issuerPath) {
    // the token endpoint checks passwords: limited by address in either mode
    if (auth.limiter && auth.limitBy === 'user') await limit(auth, `ip:${req.ip}`);
    return serveTokenRequest(req, reply, auth.issuer, services);
  }
  const route = underPrefix ? inNamespace(matchRoute(path), req, services) : undefined;
  if (route) routeKinds.set(req, route.kind);
  if (!route) {
    throw new RegistryError('NOT_FOUND', `no route for ${req.method} ${rawPath}: the registry API lives under ${prefix}/v2/`);
  }
  const found = endpoint(route, req.method);
  if (!found) {
    const allowed = allowedMethods(route).join(', ');
    reply.header('allow', allowed);
    throw new RegistryError('UNSUPPORTED', `${req.method} is not supported on this resource; allowed: ${allowed}`);
  }
  await authorizeRequest(req, auth, found.access, route.kind === 'uploads' ? mountSource(req) : undefined);
  return found.handler(req, reply, route, services);
}

/**
 * containerd sends every request to a mirror with `?ns=<registry host>`: with mirrors under
 * prefixes the repository is the one under that host's prefix (proxy/mirrors.ts)
 */
function inNamespace(route: Route | undefined, req: FastifyRequest, services: Services): Route | undefined {
  const { withNamespace } = services.options;
  const ns = withNamespace && route && 'name' in route ? queryValue(req, 'ns') : undefined;
  if (ns === undefined || !route || !('name' in route)) return route;
  const name = withNamespace!(route.name, ns);
  return name !== undefined && isRepositoryName(name) ? ({ ...route, name } as Route) : route;
}

/** the valid repository name in `from` of a mount request, if any */
function mountSource(req: FastifyRequest): string | undefined {
  const from = queryValue(req, 'from');
  return from !== undefined && queryValue(req, 'mount') !== undefined && isRepositoryName(from) ? from : undefined;
}

function handleError(err: unknown, req: FastifyRequest, reply: FastifyReply, services: Services): FastifyReply {
  const answer = (error: RegistryError) => {
    noteError(req, error);
    auditRefusal(req, services, error);
    return sendError(reply, error);
  };
  if (err instanceof RegistryError) return answer(err);
  const status = (err as { statusCode?: number }).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    // Fastify's own refusals (malformed request line, unsupported body framing)
    return answer(new RegistryError('UNSUPPORTED', (err as Error).message, { status }));
  }
  if (isStorageFull(err)) {
    req.log.error({ err }, 'storage full');
    // 507: terminal for clients (spec 7, status rule 4); an upload that hit it was removed (uploads.ts)
    return answer(new RegistryError('UNKNOWN', `the registry's storage is full: nothing was stored and an upload in progress was discarded; free space and push again (request id ${req.id})`, { status: 507 }));
  }
  if (err instanceof StorageUnavailableError) {
    req.log.error({ err }, 'storage unavailable');
    reply.header('retry-after', '5');
    return answer(new RegistryError('UNAVAILABLE', `the storage backend is unavailable, try again later (request id ${req.id}): ${err.message}`));
  }
  if (err instanceof UpstreamError) return answer(new RegistryError('UNAVAILABLE', err.message, { status: 502 }));
  req.log.error({ err }, 'request failed');
  return answer(new RegistryError('UNKNOWN', `internal error (request id ${req.id})`));
}
