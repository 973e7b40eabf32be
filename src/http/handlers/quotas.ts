/**
 * GET /v2/_berth/ext/quotas: each quota of the `policies:` block with its use (src/policies/quota.ts),
 * for the quotas whose every repository the caller may pull (a scope's use tells of all of them).
 * No quota configured: an empty list.
 */
import type { Handler } from '../context.js';
import { grantOf } from '../grants.js';
import type { Route } from '../routes.js';

export const getQuotas: Handler<Extract<Route, { kind: 'ext-quotas' }>> = async (req, reply, _route, services) => {
  const sees = grantOf(req).lists;
  const quotas = (await services.quotas?.report((_policy, names) => names.every(sees))) ?? [];
  return reply.header('content-type', 'application/json; charset=utf-8').send(JSON.stringify({ quotas }));
};
