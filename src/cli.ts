#!/usr/bin/env node
/** The `berth` command: serve, config check|schema, garbage-collect, verify, index rebuild, uploads purge, replicate, token, audit export (one file each in src/cli/). Exit codes: 0 done, 1 failed, 2 bad usage. */
import { compileFully } from './runtime/startup-heap.js'; // first: it holds the young generation and the compilers while the others load
import { paceShortLivedBuffers } from './runtime/gc-pacing.js';
import { ConfigError } from './config/errors.js';
import { StorageError } from './storage/driver.js';
import { VERSION } from './version.js';
import { COMMANDS, USAGE } from './cli/usage.js';

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

/** each command's modules are loaded when it runs: a command's memory is its own (the offline collector's peak, issue 31) */
async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== 'serve') compileFully(); // only serving has a start-up to keep out of idle memory
  if (command !== undefined && command in COMMANDS && rest.some((arg) => HELP_FLAGS.has(arg))) return help(command);
  switch (command) {
    case 'serve':
      return (await import('./cli/serve.js')).serve(rest[0]);
    case 'config':
      if (rest[0] === 'check' && rest[1]) return (await import('./cli/config.js')).checkConfig(rest[1]);
      if (rest[0] === 'schema' && rest.length === 1) return (await import('./cli/config.js')).printSchema();
      break;
    case 'uploads':
      if (rest[0] === 'purge') return (await import('./cli/uploads-purge.js')).purge(rest.slice(1));
      break;
    case 'verify':
      return (await import('./cli/verify.js')).verifyStorage(rest);
    case 'garbage-collect':
      return (await import('./cli/garbage-collect.js')).garbageCollect(rest);
    case 'index':
      return (await import('./cli/metadata-index.js')).indexCommand(rest);
    case 'replicate':
      return (await import('./cli/replicate.js')).replicateCommand(rest);
    case 'audit':
      return (await import('./cli/audit.js')).auditCommand(rest);
    case 'token':
      return (await import('./cli/token.js')).tokenCommand(rest);
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
  const unknown = command !== undefined && !(command in COMMANDS);
  console.error(unknown ? `berth: unknown command ${JSON.stringify(command)}\n${USAGE}` : USAGE);
  return 2;
}

paceShortLivedBuffers();
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    // configuration and storage problems found at start-up (e.g. a missing bucket) are one clear line
    console.error(err instanceof ConfigError || err instanceof StorageError ? `berth: ${err.message}` : err);
    process.exit(1);
  },
);
