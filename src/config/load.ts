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
import { unusedSettings } from './warnings.js';

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

/** the REGISTRY_* variables that override keys, parents before children */
function overrideNames(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env)
    .filter((k) => k.startsWith(ENV_PREFIX) && !NOT_KEYS.has(k))
    .sort((a, b) => a.length - b.length);
}

/** REGISTRY_HTTP_ADDR -> ['http', 'addr'] */
function keyPath(name: string): string[] {
  return name.slice(ENV_PREFIX.length).toLowerCase().split('_');
}

/**
 * Applies REGISTRY_<PATH> variables: REGISTRY_HTTP_ADDR sets http.addr. REGISTRY_STORAGE=<driver>
 * chooses the driver (dropping the file's driver block), as Distribution does.
 */
export function applyEnvOverrides(tree: Tree, env: NodeJS.ProcessEnv, ignored: ReadonlySet<string> = new Set()): Tree {
  for (const name of overrideNames(env)) {
    if (ignored.has(name)) continue;
    const path = keyPath(name);
    const value = env[name] as string;
    if (path.length === 1 && path[0] === 'storage') {
      const storage = asTree(tree.storage);
      for (const driver of DRIVER_NAMES) delete storage[driver];
      storage[value] = storage[value] ?? {};
      tree.storage = storage;
      continue;
    }
    setPath(tree, path, overrideValue(name, value));
  }
  return tree;
}

/** lists and maps come as YAML/JSON text ('["a","b"]'); scalars stay strings and the schema converts them */
function overrideValue(name: string, value: string): unknown {
  if (!/^\s*[[{]/.test(value)) return value;
  try {
    return parseYAML(value);
  } catch (err) {
    throw new ConfigError([`${keyPath(name).join('.')}: the value starts as a list or map but is not valid YAML or JSON: ${(err as Error).message.split('\n', 1)[0].replace(/:$/, '')}`], `environment variable ${name}`);
  }
}

function asTree(value: unknown): Tree {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Tree) : {};
}

function setPath(tree: Tree, path: string[], value: unknown): void {
  let node = tree;
  for (const key of path.slice(0, -1)) {
    node[key] = asTree(node[key]);
    node = node[key] as Tree;
  }
  node[path[path.length - 1]] = value;
}

export function validateConfig(raw: unknown, source: string): Config {
  const result = configSchema.safeParse(raw);
  if (result.success) return result.data;
  throw new ConfigError(result.error.issues.map((issue) => describeIssue(issue)), source);
}

/**
 * Validates the file's tree with the environment's overrides. A variable that names no key is
 * ignored with a warning, as Distribution does: orchestrators set REGISTRY_* variables of their
 * own (Kubernetes injects REGISTRY_PORT, REGISTRY_SERVICE_HOST, ... for a Service named
 * "registry"). A variable with a bad value stays an error, and the error names the variable.
 */
function validateWithEnv(raw: Tree, env: NodeJS.ProcessEnv, source: string): { config: Config; warnings: string[] } {
  const ignored = new Set<string>();
  for (;;) {
    const result = configSchema.safeParse(applyEnvOverrides(structuredClone(raw), env, ignored));
    if (result.success) {
      const ignoredVariables = [...ignored].map((name) => `environment variable ${name} names no configuration key (${keyPath(name).join('.')}); ignored`);
      return { config: result.data, warnings: [...ignoredVariables, ...unusedSettings(result.data)] };
    }
    const active = overrideNames(env).filter((name) => !ignored.has(name));
    const unknownKeys = result.error.issues.flatMap((issue) =>
      issue.code === 'unrecognized_keys' ? issue.keys.map((key) => [...issue.path, key].map(String)) : [],
    );
    const strays = active.filter((name) => unknownKeys.some((key) => startsWith(keyPath(name), key)));
    if (strays.length === 0) {
      const origin = (issue: z.core.$ZodIssue) => active.find((name) => startsWith(issue.path.map(String), keyPath(name)));
      throw new ConfigError(result.error.issues.map((issue) => describeIssue(issue, origin(issue))), source);
    }
    for (const name of strays) ignored.add(name);
  }
}

function startsWith(path: string[], prefix: string[]): boolean {
  return prefix.length <= path.length && prefix.every((key, i) => path[i] === key);
}

function describeIssue(issue: z.core.$ZodIssue, variable?: string): string {
  const key = issue.path.length > 0 ? issue.path.join('.') : '(top level)';
  const from = variable ? ` (from the environment variable ${variable})` : '';
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => `${[...issue.path, k].join('.')}: unknown key`).join('\n  - ');
  }
  return `${key}: ${issue.message}${from}`;
}

export interface LoadedConfig {
  config: Config;
  /** the file's path, or a description of the built-in default */
  source: string;
  /** what was ignored (environment variables that name no key) or does nothing, for the caller to print or log */
  warnings: string[];
}

export async function loadConfig(file: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<LoadedConfig> {
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
  return { ...validateWithEnv(raw, env, source), source };
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
  if (path === 'metadata.postgres.url' && typeof value === 'string') return maskURLPassword(value);
  return SECRET_KEYS.test(key) && value !== undefined && value !== '' ? MASK : value;
}

/** a database URL's password (postgres://user:PASSWORD@host/db) */
function maskURLPassword(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:/@]*:)[^@]*@/i, `$1${MASK}@`);
}
