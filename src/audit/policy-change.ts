/**
 * Policy changes, recorded at start-up: the `policies` list and `auth.access` rules are compared
 * with those the database last saw (one fingerprint for every instance on it), and a difference is
 * recorded once as `policy.change`, saying which entries (by repository glob) were added, removed
 * or changed. The first start with the audit log records the configuration it found.
 */
import { createHash } from 'node:crypto';
import type { AuditSink } from './record.js';

export interface PolicyConfig {
  policies?: readonly { repositories: readonly string[] }[];
  auth?: { access?: Record<string, unknown> };
}

/** what the database keeps between starts (index_state, as JSON) */
interface PolicyState {
  hash: string;
  policies: Record<string, unknown>;
  access: Record<string, unknown>;
}

/** the fingerprint store (metadata/audit.ts's AuditLog) */
export interface PolicyStateStore {
  policyState(): Promise<string | undefined>;
  swapPolicyState(previous: string | undefined, next: string): Promise<boolean>;
}

/** compares, stores and records; returns the record's detail when something changed */
export async function recordPolicyChange(config: PolicyConfig, store: PolicyStateStore, sink: AuditSink): Promise<string | undefined> {
  const current = stateOf(config);
  const text = await store.policyState();
  const previous = parse(text);
  if (previous?.hash === current.hash) return undefined;
  const detail = previous ? describeChange(previous, current) : `first recorded: ${describeAll(current)}`;
  // another instance starting at the same time may have recorded it: only the one that swapped records
  if (!(await store.swapPolicyState(text, JSON.stringify(current)))) return undefined;
  sink.record({ actor: undefined, action: 'policy.change', target: 'configuration', outcome: 'ok', detail });
  return detail;
}

function stateOf(config: PolicyConfig): PolicyState {
  const policies = Object.fromEntries((config.policies ?? []).map((p) => [p.repositories.join(','), p]));
  const access = { ...(config.auth?.access ?? {}) };
  const hash = createHash('sha256').update(canonical({ policies, access })).digest('hex');
  return { hash, policies, access };
}

function parse(text: string | undefined): PolicyState | undefined {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as PolicyState;
  } catch {
    return undefined;
  }
}

/** JSON with keys sorted, so the same configuration always has the same hash */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function describeChange(before: PolicyState, after: PolicyState): string {
  const parts = [diff('policies', before.policies ?? {}, after.policies), diff('auth.access', before.access ?? {}, after.access)].filter((p) => p !== '');
  return parts.join('; ');
}

function diff(section: string, before: Record<string, unknown>, after: Record<string, unknown>): string {
  const added = Object.keys(after).filter((k) => !(k in before));
  const removed = Object.keys(before).filter((k) => !(k in after));
  const changed = Object.keys(after).filter((k) => k in before && canonical(before[k]) !== canonical(after[k]));
  const out = [added.length ? `added ${added.join(' ')}` : '', removed.length ? `removed ${removed.join(' ')}` : '', changed.length ? `changed ${changed.join(' ')}` : ''].filter((p) => p !== '');
  return out.length ? `${section}: ${out.join(', ')}` : '';
}

function describeAll(state: PolicyState): string {
  const p = Object.keys(state.policies);
  const a = Object.keys(state.access);
  return `policies: ${p.length ? p.join(' ') : 'none'}; auth.access: ${a.length ? a.join(' ') : 'none'}`;
}
