/**
 * Probes for load balancers and orchestrators, outside the V2 API and its authentication:
 * /livez (the process serves requests), /readyz (every health check passes; the failing ones
 * by name otherwise), and Distribution's `/` (200 and no body while healthy). While a configured health check
 * fails, every other request answers 503, as Distribution's health handler does.
 */
import type { FastifyReply } from 'fastify';
import { RegistryError } from '../../registry/errors.js';
import type { Services } from '../context.js';

const PROBES = new Set(['/livez', '/readyz', '/']);

export function isProbe(path: string): boolean {
  return PROBES.has(path);
}

export async function serveProbe(path: string, reply: FastifyReply, services: Services): Promise<FastifyReply> {
  if (path === '/livez') return sendJSON(reply, 200, { status: 'live' });
  if (path === '/') {
    // Distribution's "alive" answer: 200, empty, behind the health gate
    refuseWhileUnhealthy(services);
    return reply.code(200).header('cache-control', 'no-cache').header('content-length', '0').send();
  }
  const failures = await services.readiness();
  return Object.keys(failures).length === 0 ? sendJSON(reply, 200, { status: 'ready' }) : sendJSON(reply, 503, { status: 'not ready', failing: failures });
}

/** 503 UNAVAILABLE while a configured health check fails; the reasons are on /readyz and /debug/health, not told to every client */
export function refuseWhileUnhealthy(services: Services): void {
  if (services.health && Object.keys(services.health.failures()).length > 0) {
    throw new RegistryError('UNAVAILABLE', 'the registry is unhealthy: a health check fails (see /readyz or /debug/health)', { headers: { 'retry-after': '10' } });
  }
}

function sendJSON(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).header('content-type', 'application/json; charset=utf-8').header('cache-control', 'no-store').send(JSON.stringify(body));
}
