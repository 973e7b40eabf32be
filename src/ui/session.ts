/**
 * GET /ui/api/session: the user the registry takes the caller for. With htpasswd the browser keeps
 * the Basic login itself, so the page learns the name here. It never challenges: a caller without
 * valid credentials is answered `{}` (no second login dialog over the one a view's request opens).
 */
import type { FastifyRequest } from 'fastify';
import type { Services } from '../http/context.js';
import { authorizeRequest } from '../http/authorize.js';
import { RegistryError } from '../registry/errors.js';
import type { Session } from './wire.js';

export async function session(req: FastifyRequest, services: Services): Promise<Session> {
  try {
    const grant = await authorizeRequest(req, services.auth, []);
    return grant.user === undefined ? {} : { user: grant.user };
  } catch (err) {
    if (err instanceof RegistryError && err.code === 'UNAUTHORIZED') return {};
    throw err;
  }
}
