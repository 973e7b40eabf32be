/**
 * `berth audit export [--since 24h] [--until WHEN] [--repository R] [--actor A] [--action X] CONFIG.yml`:
 * the audit log's records (docs/security.md, "Audit log") as JSON lines, oldest first, read from
 * the metadata database page by page (a running registry may go on writing).
 */
import { ConfigError } from '../config/errors.js';
import { loadConfig } from '../config/load.js';
import { openMetadataIndex } from '../features/metadata.js';
import { parseAuditExportArgs } from './audit-args.js';
import { USAGE } from './usage.js';

const PAGE = 1000;

export async function auditCommand(argv: string[], write: (line: string) => boolean = (line) => process.stdout.write(line)): Promise<number> {
  const [sub, ...rest] = argv;
  const parsed = sub === 'export' ? parseAuditExportArgs(rest, Date.now()) : `no command "audit ${sub ?? ''}" (berth audit export --since 24h CONFIG.yml)`;
  if (typeof parsed === 'string') {
    console.error(`berth audit: ${parsed}\n${USAGE}`);
    return 2;
  }
  const { config } = await loadConfig(parsed.file);
  if (!config.metadata?.enabled) throw new ConfigError(['metadata: the audit log is kept in the metadata index, which this configuration turns off'], 'metadata');
  const [index, { AuditLog }] = await Promise.all([openMetadataIndex(config), import('../metadata/audit.js')]);
  try {
    const log = new AuditLog(index.db);
    let cursor;
    for (;;) {
      const rows = await log.page(parsed.filter, { newest: false, cursor, limit: PAGE });
      for (const { id: _id, ...row } of rows) {
        if (!write(JSON.stringify(row) + '\n')) await new Promise((resolve) => process.stdout.once('drain', resolve));
      }
      if (rows.length < PAGE) break;
      cursor = { at: rows[rows.length - 1].at, id: rows[rows.length - 1].id };
    }
    return 0;
  } finally {
    await index.close();
  }
}
