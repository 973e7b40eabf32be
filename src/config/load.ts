/**
 * Loading the configuration: YAML file (or the built-in default), then REGISTRY_* environment
 * overrides, then validation. Errors name the full key path and what is allowed.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYAML } from 'yaml';
import { z } from 'zod';
import { configSchema, DRIVER_NAMES, type Config } from './schema.js';
import { MASK, maskHeaders } from '../mask.js';
import { ConfigError } from './errors.js';

export { ConfigError } from './errors.js';

/** What `npm start` runs with when no file is given: filesystem storage under ./data, deletes enabled. */
export const DEFAULT_CONFIG = {
  version: '0.1',
  storage: { filesystem: { rootdirectory: './data' }, delete: { enabled: true } },
  http: { addr: '0.0.0.0:5000' },
};

const ENV_PREFIX = 'REGISTRY_';
const NOT_KEYS = new Set(['REGISTRY_CONFIGURATION_PATH']);

type Tree = Record<string, unknown>;

/**
 * Applies REGISTRY_<PATH> variables: REGISTRY_HTTP_ADDR sets http.addr. REGISTRY_STORAGE=<driver>
 * chooses the driver (dropping the file's driver block), as Distribution does.
 */
export function applyEnvOverrides(tree: Tree, env: NodeJS.ProcessEnv): Tree {
  const names = Object.keys(env)
    .filter((k) => k.startsWith(ENV_PREFIX) && !NOT_KEYS.has(k))
    .sort((a, b) => a.length - b.length); // parents before children
  for (const name of names) {
    const path = name.slice(ENV_PREFIX.length).toLowerCase().split('_');
    const value = env[name] as string;
    if (path.length === 1 && path[0] === 'storage') {
      const storage = asTree(tree.storage);
      for (const driver of DRIVER_NAMES) delete storage[driver];
      storage[value] = storage[value] ?? {};
      tree.storage = storage;
      continue;
    }
    setPath(tree, path, value);
  }
  return tree;
}

function asTree(value: unknown): Tree {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Tree) : {};
}

function setPath(tree: Tree, path: string[], value: string): void {
  let node = tree;
  for (const key of path.slice(0, -1)) {
    node[key] = asTree(node[key]);
    node = node[key] as Tree;
  }
  const last = path[path.length - 1];
  // lists and maps come as YAML/JSON text ('["a","b"]'); scalars stay strings and the schema converts them
  node[last] = /^\s*[[{]/.test(value) ? parseYAML(value) : value;
}

export function validateConfig(raw: unknown, source: string): Config {
  const result = configSchema.safeParse(raw);
  if (result.success) return result.data;
  throw new ConfigError(result.error.issues.map(describeIssue), source);
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const key = issue.path.length > 0 ? issue.path.join('.') : '(top level)';
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => `${[...issue.path, k].join('.')}: unknown key`).join('\n  - ');
  }
  return `${key}: ${issue.message}`;
}

export async function loadConfig(file: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<{ config: Config; source: string }> {
  const path = file ?? env.REGISTRY_CONFIGURATION_PATH;
  let raw: Tree;
  let source: string;
  if (path) {
    source = path;
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      throw new ConfigError([`cannot read ${path}: ${(err as Error).message}`], path);
    }
    try {
      raw = asTree(parseYAML(text));
    } catch (err) {
      throw new ConfigError([`not valid YAML: ${(err as Error).message}`], path);
    }
  } else {
    source = 'built-in default (filesystem storage under ./data)';
    raw = structuredClone(DEFAULT_CONFIG);
  }
  return { config: validateConfig(applyEnvOverrides(raw, env), source), source };
}

const SECRET_KEYS = /secret|password|privatekey|accesskey|authorization|token/i;

/** notification endpoint headers often carry tokens: every value is masked, whatever the header's name */
const HEADER_MAPS = /^notifications\.endpoints\.\d+\.headers$/;

/** the configuration with secrets masked, for `berth config check` and start-up logs */
export function maskSecrets(value: unknown, key = '', path = ''): unknown {
  if (HEADER_MAPS.test(path)) return maskHeaders(value as Record<string, string[]>);
  if (Array.isArray(value)) return value.map((v, i) => maskSecrets(v, key, `${path}.${i}`));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskSecrets(v, k, path ? `${path}.${k}` : k)]));
  }
  return SECRET_KEYS.test(key) && value !== undefined && value !== '' ? MASK : value;
}
