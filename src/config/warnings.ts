/**
 * Settings that are valid but do nothing as written: accepted (Distribution accepts them too), and
 * said once at start-up and by `berth config check`, so an operator does not believe they act.
 */
import { REDIS_IGNORED_KEYS, type Config } from './schema.js';

/** Distribution's keys that berth accepts and ignores, and why that loses nothing */
const IGNORED: [path: string, why: string][] = [
  ['log.hooks', 'log hooks (mail on error) are not implemented; use your log collector'],
  ['log.reportcaller', 'Go source locations do not apply'],
  ['http.http2', 'berth serves HTTP/2 with TLS (ALPN) and HTTP/1.1 otherwise'],
  ['http.h2c', 'cleartext HTTP/2 is not offered: clients use HTTP/1.1'],
  ['storage.tag.concurrencylimit', 'tag lookups are bounded by berth itself'],
  ['compatibility.schema1.signingkeyfile', 'berth serves manifests as pushed and never converts them to schema1, so it signs none'],
  ['reporting', 'bugsnag and New Relic reporting are not implemented; use /metrics'],
];

function at(tree: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((node, key) => (node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined), tree);
}

export function unusedSettings(config: Config): string[] {
  const warnings: string[] = [];
  for (const [path, why] of IGNORED) if (at(config, path) !== undefined) warnings.push(`${path}: accepted for compatibility and ignored (${why})`);
  const poolKnobs = config.redis ? REDIS_IGNORED_KEYS.filter((key) => (config.redis as Record<string, unknown>)[key] !== undefined) : [];
  if (poolKnobs.length > 0) warnings.push(`redis: ${poolKnobs.join(', ')}: accepted for compatibility and ignored (berth keeps one multiplexed connection per process)`);
  if (config.loglevel !== undefined) warnings.push('loglevel: deprecated (as in Distribution); use log.level');
  if (config.redis && !config.ratelimit && config.storage.cache?.blobdescriptor !== 'redis') {
    warnings.push('redis: configured but unused: berth uses Redis to share ratelimit buckets and, with storage.cache.blobdescriptor: redis, the metadata cache between instances (set one, or remove the block)');
  }
  return warnings;
}
