/**
 * Distribution's configuration keys against berth's loader (tools/distribution-keys.ts writes
 * docs/distribution-keys.md with it; test/config/distribution-keys.test.ts checks the table).
 * A key is a dotted path, `[]` marking a list of objects (`notifications.endpoints[].name`).
 */
import { configSchema } from '../../src/config/schema.js';
import { unusedSettings } from '../../src/config/warnings.js';

export interface Row {
  key: string;
  example: unknown;
  status: 'implemented' | 'warned' | 'refused';
  why?: string;
}

type Leaves = [key: string, example: unknown][];

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const STORAGE_DRIVERS = new Set(['filesystem', 'inmemory', 's3', 'azure', 'gcs', 'swift', 'oss']);
/** sections validated whole: their keys need each other (redis.tls needs redis.addr, proxy.exec proxy.remoteurl) */
const WHOLE = new Set(['redis', 'proxy']);

/**
 * the part of the configuration a key is validated with: its first two levels (`auth.htpasswd`),
 * the top-level block for a key of the block itself (http.addr goes with http.secret), or a whole
 * block whose keys need each other
 */
export function sectionOf(key: string): string {
  const path = key.split('.');
  const depth = WHOLE.has(path[0]) || path.length < 3 ? 1 : 2;
  return path.slice(0, depth).join('.').replace(/\[\]$/, '');
}

/** the leaves of a configuration tree, grouped by section */
export function sectionsOf(tree: Record<string, unknown>): Map<string, Leaves> {
  const sections = new Map<string, Leaves>();
  const walk = (value: unknown, path: string[]) => {
    if (isObject(value) && Object.keys(value).length > 0) {
      for (const [key, child] of Object.entries(value)) walk(child, [...path, key]);
      return;
    }
    if (Array.isArray(value) && value.length > 0 && isObject(value[0])) {
      walk(value[0], [...path.slice(0, -1), `${path[path.length - 1]}[]`]);
      return;
    }
    const key = path.join('.');
    const section = sectionOf(key);
    sections.set(section, [...(sections.get(section) ?? []), [key, value]]);
  };
  walk(tree, []);
  return sections;
}

/** what a section needs from elsewhere in the file to stand (a Redis cache needs the redis block) */
const CONTEXT: Record<string, Record<string, unknown>> = {
  'storage.cache': { redis: { addr: 'localhost:6379' } },
};

/** the configuration made of the section's leaves (with inmemory storage unless it is a storage driver) */
export function treeOf(section: string, leaves: Leaves): Record<string, unknown> {
  const [top, second] = section.split('.');
  const driver = top === 'storage' && STORAGE_DRIVERS.has(second);
  const tree: Record<string, unknown> = { version: '0.1', storage: driver ? {} : { inmemory: {} }, ...structuredClone(CONTEXT[section] ?? {}) };
  for (const [key, example] of leaves) {
    let node: Record<string, unknown> = tree;
    const parts = key.split('.');
    for (const part of parts.slice(0, -1)) {
      if (part.endsWith('[]')) {
        const name = part.slice(0, -2);
        const list = (node[name] ??= [{}]) as Record<string, unknown>[];
        node = list[0];
      } else node = (node[part] = isObject(node[part]) ? node[part] : {}) as Record<string, unknown>;
    }
    node[parts[parts.length - 1]] = example;
  }
  return tree;
}

/** the keys a warning is about: `path: why`, or `redis: a, b, c: why` for several keys of one block */
function warnedKeys(warning: string): string[] {
  const [path, rest] = [warning.slice(0, warning.indexOf(':')), warning.slice(warning.indexOf(':') + 2)];
  const list = /^([a-z0-9]+(?:, [a-z0-9]+)*): /.exec(rest)?.[1];
  return list && path === 'redis' ? list.split(', ').map((key) => `${path}.${key}`) : [path];
}

const under = (key: string, path: string) => key === path || key.startsWith(`${path}.`) || key.startsWith(`${path}[]`);

/** what berth's loader does with each key of the section */
export function classify(section: string, leaves: Leaves): Row[] {
  const result = configSchema.safeParse(treeOf(section, leaves));
  const errors: [path: string, why: string][] = result.success
    ? []
    : result.error.issues.flatMap((issue) => {
        const path = issue.path.map(String).join('.').replace(/\.0(\.|$)/g, '[]$1');
        return issue.code === 'unrecognized_keys' ? issue.keys.map((k): [string, string] => [path ? `${path}.${k}` : k, 'unknown key']) : [[path, issue.message] as [string, string]];
      });
  // "redis: configured but unused" is about the file as a whole (no ratelimit), not a key
  const warnings = result.success ? unusedSettings(result.data).filter((w) => !w.includes('configured but unused')) : [];
  return leaves.map(([key, example]): Row => {
    const error = errors.find(([path]) => path !== '' && under(key, path));
    if (error) return { key, example, status: 'refused', why: error[1] };
    const warning = warnings.find((w) => warnedKeys(w).some((path) => under(key, path)));
    if (warning) return { key, example, status: 'warned', why: warning.slice(warning.indexOf(':') + 2) };
    if (!result.success && errors.some(([path]) => path === '' || under(section, path))) return { key, example, status: 'refused', why: errors.map(([p, w]) => `${p}: ${w}`).join('; ') };
    return { key, example, status: 'implemented' };
  });
}
