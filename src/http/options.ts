import type { ConnectionLimits } from './limits.js';

/** What the HTTP edge reads from the configuration, worked out once by the composition root. */
export interface EdgeOptions {
  /** storage.maintenance.readonly.enabled: every write answers 405 UNSUPPORTED */
  readOnly: boolean;
  /** storage.delete.enabled */
  deletes: boolean;
  /** blob GETs may redirect to the storage's own URL (storage.redirect.disable is false) */
  redirect: boolean;
  /** the most entries one catalog or tags page may ask for (catalog.maxentries) */
  pageMax: number;
  /** http.prefix without its trailing slash: '' or '/path' (see normalisePrefix) */
  prefix: string;
  /** notifications.events.includereferences: push and pull events list the manifest's references */
  includeReferences: boolean;
  /** http.headers: sent with every response */
  headers: Readonly<Record<string, readonly string[]>>;
  /** http.limits: connections, header and idle timeouts, the minimum body rate */
  limits: ConnectionLimits;
  /** the access log line per request (log.accesslog.disabled is false) */
  accessLog: boolean;
  /** a write to this repository answers 405 UNSUPPORTED with the message returned (a pull-through cache); undefined: allowed */
  refuseWrites?(name: string): string | undefined;
  /** containerd's `?ns=<host>`: the repository's local name when that registry host is mirrored */
  withNamespace?(name: string, ns: string): string | undefined;
}

/** http.prefix ('/registry/', or undefined for none) as the edge joins it to paths: '/registry', '' */
export function normalisePrefix(prefix: string | undefined): string {
  return (prefix ?? '/').replace(/\/$/, '');
}
