/**
 * The audit log (src/audit/): not a feature of its own in the list, because it lives in the
 * metadata index's database. features/metadata.ts loads it with the index when `audit.enabled`
 * (default on), and hands its sink on as the `audit` part: the edge and authentication record to
 * it, every instance writing its own batches to the shared database.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { AuditSink } from '../audit/record.js';
import type { Database } from '../metadata/schema.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { StorageDriver } from '../storage/driver.js';
import type { AuditReads } from '../http/context.js';
import type { Figures } from './feature.js';

export interface AuditConfig {
  audit?: { enabled: boolean; retention: number; readers?: string[] };
  policies?: { repositories: string[] }[];
  auth?: { access?: Record<string, unknown>; htpasswd?: unknown; token?: unknown };
  storage: { maintenance: { readonly: { enabled: boolean } } };
}

/** audit.retention's default: 90 days */
export const DEFAULT_AUDIT_RETENTION_MS = 90 * 24 * 3_600_000;

export interface AuditParts {
  sink: AuditSink;
  reads: AuditReads;
  attach(driver: StorageDriver): void;
  figures(): Figures;
  close(): Promise<void>;
}

/** with the metadata index on: is the audit log too? */
export function auditEnabled(config: AuditConfig): boolean {
  return config.audit?.enabled ?? true;
}

export async function loadAudit(config: AuditConfig, db: Kysely<Database>, { scheduler, logger }: { scheduler: Scheduler; logger: Logger }): Promise<AuditParts> {
  const [{ AuditLog }, { BatchedAuditSink }, { recordPolicyChange }, { auditRetentionTask }] = await Promise.all([
    import('../metadata/audit.js'),
    import('../audit/sink.js'),
    import('../audit/policy-change.js'),
    import('../audit/retention.js'),
  ]);
  const log = new AuditLog(db);
  const auditLogger = logger.child({ component: 'audit' });
  const sink = new BatchedAuditSink(log, scheduler.clock, (err) => auditLogger.warn({ err }, 'could not write audit records to the metadata database (kept for the next flush)'));
  // a database that refuses this write refuses the records too (the sink warns); start-up goes on
  const changed = await recordPolicyChange(config, log, sink).catch((err: unknown) => void auditLogger.warn({ err }, 'could not compare the policies with those the audit log last recorded'));
  if (changed) auditLogger.info({ detail: changed }, 'policy change recorded in the audit log');
  const readers = config.audit?.readers;
  // without authentication everyone reads everything anyway; with it only the users named may
  const authenticated = config.auth?.htpasswd !== undefined || config.auth?.token !== undefined;
  return {
    sink,
    reads: { log, mayRead: (grant) => (grant.user !== undefined && readers?.includes(grant.user) === true) || (!authenticated && readers === undefined) },
    attach(driver) {
      if (config.storage.maintenance.readonly.enabled) return;
      scheduler.every(auditRetentionTask(driver, log, config.audit?.retention ?? DEFAULT_AUDIT_RETENTION_MS, scheduler.clock, auditLogger));
    },
    figures: () => ({ audit: { written: sink.written, dropped: sink.dropped } }),
    close: () => sink.close().catch((err: unknown) => auditLogger.warn({ err }, 'could not write the last audit records to the metadata database')),
  };
}
