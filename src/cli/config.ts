/** `berth config check CONFIG.yml` and `berth config schema`. */
import { loadConfig, maskSecrets } from '../config/load.js';
import { checkNamedFiles } from '../config/named-files.js';

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
