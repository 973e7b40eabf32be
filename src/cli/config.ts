/** `berth config check CONFIG.yml` and `berth config schema`. */
import { ConfigError, loadConfig, maskSecrets } from '../config/load.js';
import { namedFileProblems } from '../config/named-files.js';
import type { Config } from '../config/schema.js';

export async function checkConfig(file: string): Promise<number> {
  const { config, source, warnings } = await loadConfig(file);
  for (const warning of warnings) console.error(`warning: ${warning}`);
  await checkNamedFiles(config, source);
  console.log(JSON.stringify(maskSecrets(config), null, 2));
  return 0;
}

export async function printSchema(): Promise<number> {
  const { configJsonSchema } = await import('../config/json-schema.js');
  console.log(JSON.stringify(configJsonSchema(), null, 2));
  return 0;
}

/** the files the configuration names (htpasswd, keys, certificates): every problem at once, as a configuration error */
export async function checkNamedFiles(config: Config, source: string): Promise<void> {
  const problems = await namedFileProblems(config);
  if (problems.length > 0) throw new ConfigError(problems, source);
}
