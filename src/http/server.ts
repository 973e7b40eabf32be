/**
 * The HTTP edge: a Fastify server with one catch-all route, our own matcher for `/v2/<name>/...`
 * paths, raw request streams for blob bodies, the JSON error body everywhere, an access log line
 * per request, and the Docker-* twin of every Registry-* header.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { RegistryError } from '../registry/errors.js';
import { StorageUnavailableError } from '../storage/driver.js';
import type { Handler, Services } from './context.js';
import { sendError } from './errors.js';
import { getBase } from './handlers/base.js';
import { getCatalog } from './handlers/catalog.js';
import { getTags } from './handlers/tags.js';
import { deleteBlob, getBlob } from './handlers/blobs.js';
import { deleteManifest, getManifest, putManifest } from './handlers/manifests.js';
import { getReferrers } from './handlers/referrers.js';
import { deleteUpload, getUpload, patchUpload, postUpload, putUpload } from './handlers/uploads.js';
import { matchRoute, METHODS, type Route } from './routes.js';
import { addDockerTwins, API_VERSION, API_VERSION_HEADER } from './wire-names.js';

type HandlerTable = { [K in Route['kind']]: Partial<Record<string, Handler<Extract<Route, { kind: K }>>>> };

const HANDLERS: HandlerTable = {
  base: { GET: getBase, HEAD: getBase },
  blob: { GET: getBlob, HEAD: getBlob, DELETE: deleteBlob },
  uploads: { POST: postUpload },
  upload: { GET: getUpload, PATCH: patchUpload, PUT: putUpload, DELETE: deleteUpload },
  manifest: { GET: getManifest, HEAD: getManifest, PUT: putManifest, DELETE: deleteManifest },
  tags: { GET: getTags },
  catalog: { GET: getCatalog },
  referrers: { GET: getReferrers },
};

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function buildServer(services: Services, logger: FastifyBaseLogger): FastifyInstance {
  const { config } = services;
  const app = Fastify({
    loggerInstance: logger,
    // one access-log line per request is written below instead of Fastify's two
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // names are matched on the raw path; Fastify must not reject or rewrite unusual ones
    routerOptions: { ignoreDuplicateSlashes: false, maxParamLength: 1024 },
  });

  // bodies stay unread streams: blob data goes straight from the socket to storage
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));

  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
    reply.header(API_VERSION_HEADER, API_VERSION);
    for (const [name, values] of Object.entries(config.http.headers)) reply.header(name, values.join(', '));
  });
  app.addHook('onSend', async (_req, reply, payload) => {
    addDockerTwins(reply);
    return payload;
  });
  if (!config.log.accesslog.disabled) {
    app.addHook('onResponse', async (req, reply) => {
      req.log.info(
        {
          method: req.method,
          path: req.url.split('?')[0],
          status: reply.statusCode,
          bytesIn: Number(req.headers['content-length'] ?? 0),
          bytesOut: Number(reply.getHeader('content-length') ?? 0),
          durationMs: Math.round(reply.elapsedTime * 10) / 10,
          remoteAddr: req.ip,
          userAgent: req.headers['user-agent'],
        },
        'request',
      );
    });
  }

  const prefix = (config.http.prefix ?? '/').replace(/\/$/, '');
  app.route({ method: [...ALL_METHODS], url: '*', handler: (req, reply) => dispatch(req, reply, services, prefix) });
  app.setNotFoundHandler((req, reply) => dispatch(req, reply, services, prefix));
  app.setErrorHandler((err, req, reply) => handleError(err, req, reply));
  return app;
}

async function dispatch(req: FastifyRequest, reply: FastifyReply, services: Services, prefix: string): Promise<unknown> {
  const rawPath = req.url.split('?')[0];
  const path = prefix && rawPath.startsWith(prefix + '/') ? rawPath.slice(prefix.length) : rawPath;
  const route = matchRoute(path);
  if (!route) {
    throw new RegistryError('NOT_FOUND', `no route for ${req.method} ${rawPath}: the registry API lives under ${prefix}/v2/`);
  }
  const handler = (HANDLERS[route.kind] as Record<string, Handler | undefined>)[req.method];
  if (!handler) {
    reply.header('allow', METHODS[route.kind].join(', '));
    throw new RegistryError('UNSUPPORTED', `${req.method} is not supported on this resource; allowed: ${METHODS[route.kind].join(', ')}`);
  }
  return handler(req, reply, route, services);
}

function handleError(err: unknown, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (err instanceof RegistryError) return sendError(reply, err);
  const status = (err as { statusCode?: number }).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    // Fastify's own refusals (malformed request line, unsupported body framing)
    return sendError(reply, new RegistryError('UNSUPPORTED', (err as Error).message, { status }));
  }
  if (err instanceof StorageUnavailableError) {
    req.log.error({ err }, 'storage unavailable');
    reply.header('retry-after', '5');
    return sendError(reply, new RegistryError('UNAVAILABLE', `the storage backend is unavailable, try again later (request id ${req.id}): ${err.message}`));
  }
  req.log.error({ err }, 'request failed');
  return sendError(reply, new RegistryError('UNKNOWN', `internal error (request id ${req.id})`));
}
