/**
 * `berth token create|list|revoke`: API tokens (src/auth/api-tokens.ts) in the metadata database.
 * `create` prints the secret once; only its hash is kept. Created here, a token has no owner: it
 * is limited by its globs and actions alone. Creating and revoking are recorded in the audit log
 * when it is on.
 */
import { userInfo } from 'node:os';
import type { BatchedAuditSink } from '../audit/sink.js';
import { ApiTokenProblem, type TokenView } from '../auth/api-tokens.js';
import { loadConfig } from '../config/load.js';
import { auditEnabled } from '../features/audit.js';
import { openMetadataIndex } from '../features/metadata.js';
import type { MetadataIndex } from '../metadata/metadata-index.js';
import { systemClock } from '../scheduler/clock.js';
import { parseTokenArgs } from './token-args.js';
import { USAGE } from './usage.js';

export async function tokenCommand(argv: string[]): Promise<number> {
  const args = parseTokenArgs(argv);
  if (typeof args === 'string') {
    console.error(`berth token: ${args}\n${USAGE}`);
    return 2;
  }
  const { config } = await loadConfig(args.file);
  if (!config.metadata?.enabled) {
    console.error('berth token: API tokens are kept in the metadata database, and this configuration has none: add a metadata block (metadata: {enabled: true}, SQLite or PostgreSQL)');
    return 1;
  }
  const index = await openMetadataIndex(config);
  const audit = auditEnabled(config) ? await commandAudit(index.db) : undefined;
  try {
    const [{ ApiTokenRecords, DuplicateTokenName }, { ApiTokens }] = await Promise.all([import('../metadata/api-tokens.js'), import('../auth/api-tokens.js')]);
    const tokens = new ApiTokens(new ApiTokenRecords(index.db), systemClock, audit);
    switch (args.command) {
      case 'create':
        try {
          const { token, secret } = await tokens.create(args.token, commandActor());
          console.log(secret);
          console.error(`created API token ${token.name}: ${describe(token)}. The line above is its secret, shown this once: use it as the password of "docker login -u ${token.name}".`);
          return 0;
        } catch (err) {
          if (err instanceof DuplicateTokenName || err instanceof ApiTokenProblem) {
            console.error(`berth token: ${err.message}`);
            return 1;
          }
          throw err;
        }
      case 'list': {
        const list = await tokens.list();
        if (list.length === 0) console.log('no API tokens');
        for (const token of list) console.log(`${token.name}\t${token.state}\t${describe(token)}`);
        return 0;
      }
      case 'revoke': {
        if (await tokens.revoke(args.name, { actor: commandActor() })) {
          console.log(`revoked API token ${args.name}: every instance refuses it within a few seconds`);
          return 0;
        }
        const known = (await tokens.list()).find((t) => t.name === args.name);
        console.error(`berth token: ${known ? `API token ${JSON.stringify(args.name)} was revoked already (at ${known.revoked})` : `no API token named ${JSON.stringify(args.name)} (berth token list shows them)`}`);
        return 1;
      }
    }
  } finally {
    await close(audit, index);
  }
}

/** the audit records first: they are written into the index's database */
async function close(audit: BatchedAuditSink | undefined, index: MetadataIndex): Promise<void> {
  await audit?.close();
  await index.close();
}

/** the audit log's sink for this one command (its records are written at close) */
async function commandAudit(db: MetadataIndex['db']): Promise<BatchedAuditSink> {
  const [{ AuditLog }, { BatchedAuditSink }] = await Promise.all([import('../metadata/audit.js'), import('../audit/sink.js')]);
  return new BatchedAuditSink(new AuditLog(db), systemClock);
}

/** who ran the command, for the audit record: the operating system's user */
function commandActor(): string {
  return `cli:${userInfo().username}`;
}

function describe(token: TokenView): string {
  const parts = [`${token.actions.join(',')} on ${token.repositories.join(', ')}`];
  if (token.owner !== undefined) parts.push(`owner ${token.owner}`);
  parts.push(`created ${token.created}`);
  parts.push(token.expires !== undefined ? `expires ${token.expires}` : 'never expires');
  if (token.revoked !== undefined) parts.push(`revoked ${token.revoked}`);
  parts.push(token.lastUsed !== undefined ? `last used ${token.lastUsed}` : 'never used');
  return parts.join(', ');
}
