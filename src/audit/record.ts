/**
 * One audit record: who did what, when, from where, and how it ended. The rooms that see an
 * action (the edge, auth, the token commands, the policies) hand records to an AuditSink; the audit
 * room (src/audit/) keeps them in the metadata database. Recording never fails the request.
 */
export interface AuditRecord {
  /** ISO time; the sink fills it in when absent */
  at?: string;
  /** the user, token name or federated subject; undefined for anonymous */
  actor: string | undefined;
  /** the client's address */
  address?: string;
  /** `push`, `tag`, `delete`, `mount`, `proxy-fill`, `sign-in`, `token.create`, `token.revoke`, `policy.change`, `deny`, ... */
  action: string;
  repository?: string;
  /** a tag, digest, token name or policy source */
  target?: string;
  outcome: 'ok' | 'denied' | 'failed';
  /** a person's sentence: the error message of a denial, the rule that decided */
  detail?: string;
}

export interface AuditSink {
  record(record: AuditRecord): void;
}
