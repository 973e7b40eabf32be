/**
 * GET /ui/api/audit?repository=&actor=&action=&n=&last=: a page of the audit log, newest first,
 * filtered (each filter an exact value). Who may read it: the users `audit.readers` names; when
 * it is unset, everyone on a registry without authentication and nobody on one with it (the log
 * names every user and address: being allowed to pull is not enough). `last` is the `next` of the
 * page before (`<time>|<id>`).
 */
import type { FastifyRequest } from 'fastify';
import { authorizeRequest } from '../http/authorize.js';
import { queryValue } from '../http/body.js';
import type { Services } from '../http/context.js';
import { parsePagination } from '../http/pagination.js';
import type { AuditCursor, AuditFilter } from '../metadata/audit.js';
import { RegistryError } from '../registry/errors.js';
import type { AuditPage } from './wire.js';

const AUDIT_PAGE = { defaultN: 50, max: 200 };

export async function auditPage(req: FastifyRequest, services: Services): Promise<AuditPage> {
  const reads = services.auditReads;
  if (!reads) throw new RegistryError('NOT_FOUND', 'the audit log is off: it needs the metadata index (metadata) and audit.enabled');
  const grant = await authorizeRequest(req, services.auth, []);
  if (!reads.mayRead(grant)) throw new RegistryError('DENIED', `${grant.user === undefined ? 'an anonymous user' : `user ${JSON.stringify(grant.user)}`} may not read the audit log: audit.readers names who may`);
  const page = parsePagination(req, AUDIT_PAGE);
  const filter: AuditFilter = {};
  for (const key of ['repository', 'actor', 'action'] as const) {
    const value = queryValue(req, key);
    if (value) filter[key] = value;
  }
  const cursor = page.last === undefined ? undefined : parseCursor(page.last);
  const rows = page.n === 0 ? [] : await reads.log.page(filter, { newest: true, cursor, limit: page.n + 1 });
  const records = rows.slice(0, page.n);
  const lastRow = records[records.length - 1];
  return { records: records.map(({ id: _id, ...record }) => record), next: rows.length > page.n && lastRow ? `${lastRow.at}|${lastRow.id}` : undefined };
}

function parseCursor(text: string): AuditCursor {
  const bar = text.lastIndexOf('|');
  const id = Number(text.slice(bar + 1));
  if (bar < 0 || !Number.isSafeInteger(id)) throw new RegistryError('PAGINATION_NUMBER_INVALID', `invalid page cursor ${JSON.stringify(text)}: pass the \`next\` of the page before`);
  return { at: text.slice(0, bar), id };
}
