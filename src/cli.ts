#!/usr/bin/env node
/** The `berth` command: serve, config check|schema, garbage-collect, verify, uploads purge. Exit codes: 0 done, 1 failed, 2 bad usage. */
import { servingStarted, startupDone } from './startup-heap.js'; // first: it holds the young generation while the others load
import { ConfigError, loadConfig, maskSecrets } from './config/load.js';
import type { Config } from './config/schema.js';
import { s3Feature } from './features/s3.js';
import { createLogger } from './log.js';
import { VERSION } from './version.js';
import { workerIndex } from './workers/index.js';
import { parseCollectArgs } from './registry/gc/args.js';
import { parsePurgeArgs } from './registry/purge-args.js';
import { parseVerifyArgs } from './registry/verify/args.js';
import { progressLine } from './progress.js';
import { collectGarbage, summaryLine } from './registry/gc/index.js';
import { purgeUploads } from './registry/purge.js';
import { Scheduler } from './scheduler/scheduler.js';
import { StorageError, type StorageDriver } from './storage/driver.js';
import { FilesystemDriver } from './storage/filesystem.js';

/** one entry per command: its synopsis line and what it does, for `berth help` and `berth <command> --help` */
const COMMANDS: Record<string, string> = {
  serve: `berth serve [CONFIG.yml]
    run the registry (no file: filesystem storage under ./data on :5000)`,
  config: `berth config check CONFIG.yml
    print the effective configuration (secrets masked), or every error
  berth config schema
    print the configuration's JSON Schema (for editors)`,
  'garbage-collect': `berth garbage-collect [--dry-run] [--delete-untagged] [--quiet] [--retention] CONFIG.yml
    delete the blobs no manifest references (with --delete-untagged, also the manifests no tag
    reaches). Read-only configuration: at once; otherwise safely beside live registries, by online
    collection's protocol (trash, storage.maintenance.gc.delay). --retention first applies
    storage.maintenance.retention.policies (tags and untagged manifests, with delete events)`,
  verify: `berth verify [--repository NAME] [--fix] CONFIG.yml
    check that every blob hashes to its name and every link and manifest reference exists; exit 1
    on damage. --fix moves what is provably broken aside (to _berth/verify/quarantine/)`,
  uploads: `berth uploads purge [--older-than DURATION] [--dry-run] CONFIG.yml
    delete the uploads started longer ago than DURATION (default: storage.maintenance.uploadpurging.age)`,
};

const USAGE = `usage:
${Object.values(COMMANDS)
  .map((text) => `  ${text.replace(/\n/g, '\n  ')}`)
  .join('\n')}
  berth --version | help [COMMAND]

environment: REGISTRY_CONFIGURATION_PATH names the file; REGISTRY_<KEY_PATH> overrides any key
exit codes: 0 done, 1 failed (configuration, storage, or the command's own failure), 2 bad usage`;

const HELP_FLAGS = new Set(['-h', '--help']);


function help(command: string | undefined): number {
  if (command === undefined) {
    console.log(USAGE);
    return 0;
  }
  const text = COMMANDS[command];
  if (!text) {
    console.error(`berth: no command "${command}"\n${USAGE}`);
    return 2;
  }
  console.log(`usage: ${text}`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== undefined && command in COMMANDS && rest.some((arg) => HELP_FLAGS.has(arg))) return help(command);
  switch (command) {
    case 'serve':
      return serve(rest[0]);
    case 'config':
      if (rest[0] === 'check' && rest[1]) return checkConfig(rest[1]);
      if (rest[0] === 'schema' && rest.length === 1) return printSchema();
      break;
    case 'uploads':
      if (rest[0] === 'purge') return purge(rest.slice(1));
      break;
    case 'verify':
      return verifyStorage(rest);
    case 'garbage-collect':
      return garbageCollect(rest);
    case '-v':
    case '--version':
    case 'version':
      console.log(`berth ${VERSION}`);
      return 0;
    case '-h':
    case '--help':
      return help(undefined);
    case 'help':
      return help(rest[0]);
  }
  console.error(USAGE);
  return 2;
}

async function serve(file: string | undefined): Promise<number> {
  const { config, source, warnings } = await loadConfig(file);
  const index = workerIndex();
  if (config.http.workers > 1 && index === undefined) {
    // the primary of several workers (src/workers/): it forks them and serves the debug listener
    const logger = createLogger(config.log);
    for (const warning of warnings) logger.warn(warning);
    const { runWorkers } = await import('./workers/index.js');
    return runWorkers({ count: config.http.workers, logger, debug: config.http.debug });
  }
  // imported here: the other commands (garbage-collect) do not load the web server and its modules
  const { createApp } = await import('./app.js');
  const logger = index === undefined ? undefined : createLogger(config.log).child({ worker: index });
  const app = await createApp(config, { configSource: source, logger, worker: index === undefined ? undefined : { index } });
  if (index === undefined) for (const warning of warnings) app.logger.warn(warning);
  await app.listen();
  servingStarted();
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      app.logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await app.close();
  return 0;
}

async function checkConfig(file: string): Promise<number> {
  const { config, warnings } = await loadConfig(file);
  for (const warning of warnings) console.error(`warning: ${warning}`);
  console.log(JSON.stringify(maskSecrets(config), null, 2));
  return 0;
}

async function printSchema(): Promise<number> {
  const { configJsonSchema } = await import('./config/json-schema.js');
  console.log(JSON.stringify(configJsonSchema(), null, 2));
  return 0;
}

/** `uploads purge`: the scheduled upload purge, once, now (e.g. after a disk filled up with partial uploads) */
async function purge(argv: string[]): Promise<number> {
  const args = parsePurgeArgs(argv);
  if (typeof args === 'string') {
    console.error(`berth uploads purge: ${args}\n${USAGE}`);
    return 2;
  }
  const { config } = await loadConfig(args.file);
  const olderThan = args.olderThan ?? config.storage.maintenance.uploadpurging.age;
  const driver = await collectionDriver(config);
  try {
    await driver.ready?.();
    const result = await purgeUploads(driver, new Date(Date.now() - olderThan), args.dryRun);
    for (const dir of result.purged) console.log(`${args.dryRun ? 'would purge' : 'purged'} ${dir}`);
    for (const error of result.errors) console.error(`could not purge ${error}`);
    console.log(`${args.dryRun ? 'would purge' : 'purged'} ${result.purged.length} uploads started before ${new Date(Date.now() - olderThan).toISOString()}${result.errors.length ? `; ${result.errors.length} failed` : ''}`);
    return result.errors.length > 0 ? 1 : 0;
  } finally {
    await driver.close?.();
  }
}

async function verifyStorage(argv: string[]): Promise<number> {
  const args = parseVerifyArgs(argv);
  if (typeof args === 'string') {
    console.error(`berth verify: ${args}\n${USAGE}`);
    return 2;
  }
  const { config } = await loadConfig(args.file);
  const { verify, verifyLine } = await import('./registry/verify/index.js');
  const driver = await collectionDriver(config);
  const progress = progressLine();
  try {
    await driver.ready?.();
    const summary = await verify(driver, { ...args, report: (line) => progress.print(line), progress: (done, total) => progress.update('blobs hashed', done, total) });
    progress.done();
    console.log(verifyLine(summary));
    return summary.damaged > 0 ? 1 : 0;
  } finally {
    await driver.close?.();
  }
}

/**
 * `berth garbage-collect`: with a read-only configuration (nothing writes) or --dry-run, the direct
 * collection; otherwise instances may be serving the storage, and the collection follows online
 * collection's protocol (docs/decisions.md, "Garbage collection (offline)")
 */
async function garbageCollect(argv: string[]): Promise<number> {
  startupDone(); // a collection allocates much while it walks the storage: V8's usual young generation
  const args = parseCollectArgs(argv);
  if (typeof args === 'string') {
    console.error(`berth garbage-collect: ${args}\n${USAGE}`);
    return 2;
  }
  const { config } = await loadConfig(args.file);
  if (args.retention && (config.storage.maintenance.retention?.policies.length ?? 0) === 0) {
    console.error('berth garbage-collect: --retention needs storage.maintenance.retention.policies in the configuration (see docs/configuration.md)');
    return 1;
  }
  const driver = await collectionDriver(config);
  try {
    await driver.ready?.();
    if (args.retention) await retentionBeforeCollection(driver, config, args);
    if (!config.storage.maintenance.readonly.enabled && !args.dryRun) return await collectBesideInstances(driver, config, args);
    const progress = progressLine();
    const summary = await collectGarbage(driver, { ...args, report: args.quiet ? undefined : (line) => progress.print(line), progress: progress.update });
    progress.done();
    console.log(summaryLine(summary, args.dryRun));
  } finally {
    await driver.close?.();
  }
  return 0;
}

/**
 * A writable configuration: registries may be serving this storage and every writable berth
 * instance records uses, so the collection is the online one (use records, trash, the delay of
 * storage.maintenance.gc.delay), under the lease when it is free (a collection is safe without
 * it; the lease only spares duplicate work).
 */
async function collectBesideInstances(driver: StorageDriver, config: Config, args: { deleteUntagged: boolean; quiet: boolean }): Promise<number> {
  const { collectOnline } = await import('./registry/gc/online.js');
  const { Lease } = await import('./registry/gc/lease.js');
  const { LEASE_SETTLE_MS, LEASE_TTL_MS, onlineLine, underLease } = await import('./registry/gc/task.js');
  const delayMs = config.storage.maintenance.gc.delay;
  console.error(
    `berth garbage-collect: the configuration is not read-only, so registries may be using this storage: collecting as online collection does ` +
      `(what was unused for storage.maintenance.gc.delay, ${delayMs / 1000}s, goes to the trash, and a later run deletes it from there). ` +
      'With every registry stopped or read-only, run with storage.maintenance.readonly.enabled: true to delete at once.',
  );
  const collect = () => collectOnline(driver, { delayMs, dryRun: false, deleteUntagged: args.deleteUntagged, report: args.quiet ? undefined : (line) => console.log(line) });
  let summary: Awaited<ReturnType<typeof collectOnline>> | undefined;
  const logger = createLogger(config.log, process.stderr);
  const held = await underLease(new Lease(driver, { ttlMs: LEASE_TTL_MS, settleMs: LEASE_SETTLE_MS }), logger, async () => {
    summary = await collect();
  });
  if (!held) {
    console.error('berth garbage-collect: an instance is collecting now (it holds the lease); collecting anyway, which is safe but repeats its work');
    summary = await collect();
  }
  console.log(onlineLine(summary!, false, args.deleteUntagged));
  return 0;
}

/** `--retention`: the policies' deletions, their delete events delivered before the collection starts */
async function retentionBeforeCollection(driver: StorageDriver, config: Config, args: { dryRun: boolean; quiet: boolean }): Promise<void> {
  const { applyRetention, retentionLine } = await import('./registry/retention/index.js');
  const { compilePolicies } = await import('./registry/retention/policy.js');
  const { Notifier } = await import('./notifications/notifier.js');
  const notifier = new Notifier(config.notifications, createLogger(config.log, process.stderr));
  const summary = await applyRetention(driver, {
    policies: compilePolicies(config.storage.maintenance.retention!.policies),
    now: Date.now(),
    dryRun: args.dryRun,
    events: notifier,
    report: args.quiet ? undefined : (line) => console.log(line),
  });
  console.log(retentionLine(summary, args.dryRun));
  await notifier.close(config.http.draintimeout);
}

/** the configured storage backend, without middleware (a collection or purge needs no redirects) */
async function collectionDriver(config: Config): Promise<StorageDriver> {
  if (s3Feature.enabled(config)) {
    const logger = createLogger(config.log, process.stderr);
    return (await s3Feature.load(config, { logger, scheduler: new Scheduler(logger) })).driver!;
  }
  if (config.storage.filesystem) return new FilesystemDriver({ rootdirectory: config.storage.filesystem.rootdirectory });
  throw new ConfigError(['storage: this command needs filesystem or s3 storage (in-memory storage ends with its process)'], 'storage');
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    // configuration and storage problems found at start-up (e.g. a missing bucket) are one clear line
    console.error(err instanceof ConfigError || err instanceof StorageError ? `berth: ${err.message}` : err);
    process.exit(1);
  },
);
