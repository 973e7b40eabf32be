/** GET /v2/: the API version check (spec 4.1). */
import type { Handler } from '../context.js';

export const getBase: Handler = async (_req, reply) => {
  reply.header('content-type', 'application/json; charset=utf-8').send('{}');
};
