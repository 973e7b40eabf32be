/**
 * The child process of `loadConfigIsolated` (load-isolated.ts): loads yaml, zod and the schema,
 * validates the configuration with config/load.ts, sends the plain result back and ends, so the
 * serving process never holds them (docs/decisions.md, "Memory"). A bundle entry of its own
 * (src/server-bundle.ts). Argument: the configuration file, if any; the environment is its own.
 */
import { ConfigError, loadConfig } from './load.js';

export type LoadReply = { loaded: Awaited<ReturnType<typeof loadConfig>> } | { problems: string[]; source: string } | { failed: string };

async function reply(): Promise<LoadReply> {
  try {
    return { loaded: await loadConfig(process.argv[2]) };
  } catch (err) {
    if (err instanceof ConfigError) return { problems: err.problems, source: err.source };
    return { failed: (err as Error).stack ?? String(err) };
  }
}

process.send!(await reply(), () => process.disconnect());
