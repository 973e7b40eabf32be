/**
 * `berth replicate run RULE CONFIG.yml`: one run of a pull rule, now, beside any running
 * registry (it writes through the core's stores as a push does). `berth replicate status
 * CONFIG.yml`: every rule's state as JSON: its figures, its last error, what a push rule is behind.
 */
import { loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { openMetadataIndex } from '../features/metadata.js';
import { replicationRules } from '../features/replication.js';
import { createLogger } from '../log.js';
import { BlobStore } from '../registry/blobs.js';
import { ManifestStore } from '../registry/manifest-store.js';
import { TagStore } from '../registry/tags.js';
import { UploadSessions } from '../registry/uploads.js';
import { PushQueue } from '../replication/queue.js';
import { Remote } from '../replication/remote.js';
import { runPull } from '../replication/run.js';
import { emptyFigures } from '../replication/stats.js';
import { readState } from '../replication/state.js';
import { commandDriver } from './storage.js';
import { USAGE } from './usage.js';

export async function replicateCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'run' && rest.length === 2) return run(rest[0], rest[1]);
  if (sub === 'status' && rest.length === 1) return status(rest[0]);
  console.error(`berth replicate: expected "run RULE CONFIG.yml" or "status CONFIG.yml"\n${USAGE}`);
  return 2;
}

async function run(ruleName: string, file: string): Promise<number> {
  const { config } = await loadConfig(file);
  const rule = (await replicationRules(config.replication ?? [])).find((r) => r.name === ruleName);
  if (!rule) return fail(`no rule ${JSON.stringify(ruleName)} in replication (rules: ${(config.replication ?? []).map((r) => r.name).join(', ') || 'none'})`);
  if (rule.direction !== 'pull') return fail(`rule ${ruleName} is a push rule: it sends each local push as it happens, in the registry; "replicate run" runs pull rules`);
  if (config.storage.maintenance.readonly.enabled) return fail('the configuration is read-only (storage.maintenance.readonly): a pull run writes');
  const logger = createLogger(config.log, process.stderr);
  const driver = await commandDriver(config);
  const index = config.metadata?.enabled ? await openMetadataIndex(config) : undefined;
  try {
    await driver.ready?.();
    const blobs = new BlobStore(driver, undefined, { index });
    const tags = new TagStore(driver, { index });
    const manifests = new ManifestStore(driver, blobs, tags, { schema1: config.compatibility.schema1.enabled, index });
    const core = { driver, blobs, uploads: new UploadSessions(driver, blobs), manifests, tags, index };
    const remote = new Remote(rule.remote, logger.child({ component: 'replication', rule: rule.name }), rule);
    let summary;
    try {
      summary = await runPull(rule, remote, core, emptyFigures(), logger, { now: Date.now });
    } catch (err) {
      return fail(`the run of ${rule.name} failed: ${(err as Error).message}`);
    }
    console.log(JSON.stringify({ rule: rule.name, ...summary }, null, 2));
    return summary.failed > 0 ? 1 : 0;
  } finally {
    await index?.close();
    await driver.close?.();
  }
}

async function status(file: string): Promise<number> {
  const { config } = await loadConfig(file);
  const driver = await commandDriver(config);
  try {
    await driver.ready?.();
    const rules = await Promise.all((config.replication ?? []).map((rule) => ruleStatus(driver, rule)));
    console.log(JSON.stringify({ rules }, null, 2));
    return 0;
  } finally {
    await driver.close?.();
  }
}

async function ruleStatus(driver: Awaited<ReturnType<typeof commandDriver>>, rule: NonNullable<Config['replication']>[number]) {
  const state = await readState(driver, rule.name);
  const direction = rule.pull ? 'pull' : 'push';
  const base = { rule: rule.name, direction, remote: new URL((rule.pull ?? rule.push)!.url).host, lastError: state?.lastError, lastSuccess: state?.lastSuccess };
  if (direction === 'pull') return { ...base, lastRun: state?.figures };
  const queue = new PushQueue(driver, rule.name);
  const names = await queue.names();
  const oldest = names[0] && (await queue.read(names[0]));
  return { ...base, behind: names.length, oldestQueued: oldest ? new Date(oldest.at).toISOString() : undefined, retryAt: state?.retryAt, figures: state?.figures };
}

function fail(message: string): number {
  console.error(`berth replicate: ${message}`);
  return 1;
}
