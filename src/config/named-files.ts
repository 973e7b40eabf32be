/**
 * The files a configuration names (htpasswd, TLS certificates and keys, token certificates and
 * keys, the CloudFront key, Redis TLS files, upstream password files, the filesystem storage
 * root), read as `serve` reads them.
 * `config check` reports what is wrong with any of them beside the keys' errors, and `serve` asks
 * the same before it writes anything (the storage root, the upload secret): a configuration whose
 * files are wrong changes nothing. See docs/decisions.md, "Start-up: nothing written before the
 * configuration is valid".
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createSecureContext } from 'node:tls';
import { pino } from 'pino';
import { createAuth } from '../auth/index.js';
import type { TLSOptions } from '../http/server.js';
import { ConfigError } from './errors.js';
import type { Config } from './schema.js';

/** http.tls: the files read at start-up (a missing file stops start-up with its key and path) */
export function readTLS(tls: NonNullable<Config['http']['tls']>): TLSOptions {
  const ca = tls.clientcas?.map((path, i) => readNamed(path, `http.tls.clientcas.${i}`));
  return {
    cert: readNamed(tls.certificate, 'http.tls.certificate'),
    key: readNamed(tls.key, 'http.tls.key'),
    minVersion: tls.minimumtls === 'tls1.3' ? 'TLSv1.3' : 'TLSv1.2',
    ...(ca && ca.length > 0 ? { ca, requestCert: true, rejectUnauthorized: true } : {}),
  };
}

/** the file's bytes; a directory or a file that cannot be read is an Error naming the key */
function readNamed(path: string, key: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`cannot read ${key} ${path}: ${(err as Error).message}`);
  }
}

/** every problem with the files the configuration names, one line each (empty: all can be used) */
export async function namedFileProblems(config: Config): Promise<string[]> {
  const problems: string[] = [];
  const attempt = (check: () => void) => {
    try {
      check();
    } catch (err) {
      problems.push((err as Error).message);
    }
  };
  // the authentication serve builds: htpasswd, token certificates and keys, the issuer's key
  try {
    await (await createAuth({ auth: config.auth, ratelimit: config.ratelimit, prefix: '' }, { logger: pino({ level: 'silent' }) })).close();
  } catch (err) {
    problems.push((err as Error).message);
  }
  const tls = config.http.tls;
  if (tls) {
    attempt(() => {
      const options = readTLS(tls);
      try {
        createSecureContext(options);
      } catch (err) {
        throw new Error(`http.tls: the certificate ${tls.certificate} and key ${tls.key} cannot serve HTTPS: ${(err as Error).message}`);
      }
    });
  }
  // imported only when used: it brings the CloudFront signer (a registry without it does not load it)
  const { loadSigningKey } = config.middleware.storage.length > 0 ? await import('../storage/middleware/cloudfront.js') : { loadSigningKey: undefined };
  config.middleware.storage.forEach((entry, i) =>
    attempt(() => {
      try {
        loadSigningKey!(entry.options.privatekey);
      } catch (err) {
        throw new Error(`middleware.storage.${i}.options.privatekey: ${(err as { problem?: string }).problem ?? (err as Error).message}`);
      }
    }),
  );
  const root = config.storage.filesystem?.rootdirectory;
  if (root !== undefined) attempt(() => checkRoot(root));
  const redisTLS = config.redis?.tls;
  for (const [key, path] of [['certificate', redisTLS?.certificate], ['key', redisTLS?.key], ...(redisTLS?.rootcas ?? []).map((p, i) => [`rootcas.${i}`, p])]) {
    if (path) attempt(() => void readNamed(path, `redis.tls.${key}`));
  }
  const upstreams = config.proxy ? (config.proxy.upstreams?.map((u, i) => [`proxy.upstreams.${i}`, u] as const) ?? [['proxy', config.proxy] as const]) : [];
  for (const [key, upstream] of upstreams) {
    if (upstream.passwordfile) attempt(() => void readNamed(upstream.passwordfile!, `${key}.passwordfile`));
  }
  return problems;
}

/**
 * storage.filesystem.rootdirectory: a directory berth can read and write, or one it can create
 * (its nearest existing ancestor is a directory it can write), as `serve` would find out when it
 * creates it. Checked without creating anything.
 */
function checkRoot(root: string): void {
  const problem = (text: string) => new Error(`storage.filesystem.rootdirectory: cannot use ${root}: ${text}`);
  let path = resolve(root);
  for (;;) {
    let info;
    try {
      info = statSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(path) === path) throw problem((err as Error).message);
      path = dirname(path);
      continue;
    }
    if (!info.isDirectory()) throw problem(`${path} is not a directory`);
    try {
      accessSync(path, constants.R_OK | constants.W_OK | constants.X_OK);
    } catch (err) {
      throw problem(`${path} is not writable by this user (${(err as NodeJS.ErrnoException).code})`);
    }
    return;
  }
}

/** the files the configuration names (htpasswd, keys, certificates): every problem at once, as a configuration error */
export async function checkNamedFiles(config: Config, source: string): Promise<void> {
  const problems = await namedFileProblems(config);
  if (problems.length > 0) throw new ConfigError(problems, source);
}
