#!/usr/bin/env node
/** The `berth` command: serve, config check. */
import { createApp } from './app.js';
import { ConfigError, loadConfig, maskSecrets } from './config/load.js';
import { StorageError } from './storage/driver.js';

const USAGE = `usage:
  berth serve [CONFIG.yml]     run the registry (no file: filesystem storage under ./data on :5000)
  berth config check FILE      print the effective configuration, or every error
environment: REGISTRY_CONFIGURATION_PATH names the file; REGISTRY_<KEY_PATH> overrides any key`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest[0]);
    case 'config':
      if (rest[0] === 'check' && rest[1]) return checkConfig(rest[1]);
      break;
    case '-h':
    case '--help':
    case 'help':
      console.log(USAGE);
      return 0;
  }
  console.error(USAGE);
  return 2;
}

async function serve(file: string | undefined): Promise<number> {
  const { config, source } = await loadConfig(file);
  const app = await createApp(config);
  app.logger.info({ config: source }, 'starting berth');
  await app.listen();
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
  const { config } = await loadConfig(file);
  console.log(JSON.stringify(maskSecrets(config), null, 2));
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    // configuration and storage problems found at start-up (e.g. a missing bucket) are one clear line
    console.error(err instanceof ConfigError || err instanceof StorageError ? `berth: ${err.message}` : err);
    process.exit(1);
  },
);
