/**
 * An htpasswd file of bcrypt entries (`user:$2y$...`), as `htpasswd -B` writes it. Other hash
 * kinds (MD5 `$apr1$`, `{SHA}`, crypt, plain text) are refused: at start-up with the line number.
 *
 * A reload fails closed (docs/security.md): the file as it is now decides. A bad line refuses that
 * entry (its user cannot log in until the line is fixed) and is logged with its line number; the
 * other entries apply, so a user removed in the same edit loses access at once. A file that cannot
 * be read refuses every login, loudly, until it can.
 *
 * The file is re-read when its modification time or size changes, checked on use at most once a
 * second of the injected clock (an idle registry stats nothing; tests advance a ManualClock). A
 * login for an unknown user runs bcrypt against a dummy hash of the same cost, so a failed login
 * takes the same time whether or not the user exists.
 *
 * Successful logins are remembered for CACHE_MS (keyed by an HMAC of user and password under a
 * per-process random key, so the cache holds no password), because clients send the credentials
 * with every request of a push and bcrypt costs tens of milliseconds of CPU each time. Failures
 * are never cached: a wrong password always costs a full bcrypt. Any reload empties the cache.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import bcrypt from 'bcryptjs';
import { systemClock, type Clock } from '../scheduler/clock.js';

const CACHE_MS = 60_000;
const CACHE_ENTRIES = 1000;
const CHECK_EVERY_MS = 1000;
/** names with a meaning in auth.access: no htpasswd user may have them */
const RESERVED = new Set(['anonymous', '*']);

const BCRYPT = /^\$2[aby]\$(\d{2})\$[./A-Za-z0-9]{53}$/;

export class HtpasswdError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HtpasswdError';
  }
}

interface Loaded {
  users: Map<string, string>;
  dummy: string;
  mtimeMs: number;
  size: number;
}

/** what a reload found: the entries that apply, and the lines refused */
interface Reloaded {
  loaded: Loaded;
  problems: string[];
}

export class Htpasswd {
  private loaded: Loaded;
  private checkedAt: number;
  private readonly cache = new Map<string, number>();
  private readonly cacheKey = randomBytes(32);

  /** reads the file now; throws HtpasswdError naming the path and line on any problem */
  constructor(
    readonly path: string,
    private readonly onReloadError: (err: Error) => void = () => {},
    private readonly clock: Clock = systemClock,
  ) {
    const { loaded, problems } = load(path);
    if (problems.length > 0) throw new HtpasswdError(problems[0]);
    this.loaded = loaded;
    this.checkedAt = clock.now();
  }

  /** the user is in the file (its current version) */
  has(user: string): boolean {
    this.maybeReload();
    return this.loaded.users.has(user);
  }

  /**
   * a digest of the user's current entry (undefined when none): what a refresh token is bound to,
   * so a changed password or a removed user revokes the refresh tokens issued before
   */
  credential(user: string): string | undefined {
    this.maybeReload();
    const hash = this.loaded.users.get(user);
    return hash === undefined ? undefined : createHash('sha256').update(hash).digest('base64url').slice(0, 22);
  }

  get size(): number {
    return this.loaded.users.size;
  }

  /** true when `password` is the user's; constant time in whether the user exists */
  async verify(user: string, password: string): Promise<boolean> {
    this.maybeReload();
    const loaded = this.loaded;
    const key = createHmac('sha256', this.cacheKey).update(user).update('\0').update(password).digest('base64');
    const now = this.clock.now();
    const until = this.cache.get(key);
    if (until !== undefined && until > now) return true;
    const hash = loaded.users.get(user);
    // the same bcrypt work whether or not the user exists
    const ok = (await bcrypt.compare(password, hash ?? loaded.dummy)) && hash !== undefined;
    if (ok && loaded === this.loaded) {
      this.cache.delete(key);
      this.cache.set(key, now + CACHE_MS);
      if (this.cache.size > CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    }
    return ok;
  }

  private maybeReload(): void {
    const now = this.clock.now();
    if (now - this.checkedAt < CHECK_EVERY_MS) return;
    this.checkedAt = now;
    let reloaded: Reloaded;
    try {
      const info = statSync(this.path);
      if (info.mtimeMs === this.loaded.mtimeMs && info.size === this.loaded.size) return;
      reloaded = load(this.path);
    } catch (err) {
      // unreadable (removed, permissions): nobody logs in until it reads again
      const reason = err instanceof HtpasswdError ? err.message : `cannot read htpasswd file ${this.path}: ${(err as Error).message}`;
      if (this.loaded.mtimeMs !== UNREADABLE) this.onReloadError(new HtpasswdError(`${reason}: every login is refused until the file reads again`));
      this.loaded = { ...this.loaded, users: new Map(), mtimeMs: UNREADABLE, size: UNREADABLE };
      this.cache.clear();
      return;
    }
    this.loaded = reloaded.loaded;
    this.cache.clear();
    if (reloaded.problems.length > 0) this.onReloadError(new HtpasswdError(`${reloaded.problems.length} entries refused until fixed (the rest of the file applies): ${reloaded.problems.join('; ')}`));
  }
}

/** the times of a file that could not be read: any readable version differs */
const UNREADABLE = -1;

/** the file's valid entries and what is wrong with the others, by line; throws when it cannot be read */
function load(path: string): Reloaded {
  let text: string;
  let info;
  try {
    info = statSync(path);
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new HtpasswdError(`cannot read htpasswd file ${path}: ${(err as Error).message}`);
  }
  const users = new Map<string, string>();
  const twice = new Set<string>();
  const problems: string[] = [];
  let cost = 10;
  text.split(/\r?\n/).forEach((line, index) => {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const where = `${path} line ${index + 1}`;
    const problem = entryProblem(trimmed);
    if (problem) return problems.push(`${where}: ${problem}`);
    const user = trimmed.slice(0, trimmed.indexOf(':'));
    const hash = trimmed.slice(trimmed.indexOf(':') + 1);
    if (users.has(user)) {
      twice.add(user);
      return problems.push(`${where}: user ${JSON.stringify(user)} appears twice`);
    }
    users.set(user, hash);
    cost = Number(BCRYPT.exec(hash)![1]);
  });
  // a user named twice is refused altogether: which line is meant is not known
  for (const user of twice) users.delete(user);
  // a hash of a random password at the file's cost: what unknown users are checked against
  const dummy = bcrypt.hashSync(randomBytes(16).toString('hex'), cost);
  return { loaded: { users, dummy, mtimeMs: info.mtimeMs, size: info.size }, problems };
}

/** what is wrong with one entry (`user:hash`) on its own, or undefined */
function entryProblem(entry: string): string | undefined {
  const colon = entry.indexOf(':');
  if (colon <= 0) return 'expected "user:hash"';
  const user = entry.slice(0, colon);
  const hash = entry.slice(colon + 1);
  if (!BCRYPT.test(hash)) return `the entry of user ${JSON.stringify(user)} is not a bcrypt hash (${hashKind(hash)}); berth accepts bcrypt only: recreate it with "htpasswd -B"`;
  if (RESERVED.has(user)) return `${JSON.stringify(user)} is reserved (auth.access uses it for ${user === '*' ? 'any authenticated user' : 'requests without credentials'}); rename the user`;
  return undefined;
}

function hashKind(hash: string): string {
  if (hash.startsWith('$apr1$')) return 'Apache MD5';
  if (hash.startsWith('{SHA}')) return 'SHA-1';
  if (hash.startsWith('$1$')) return 'MD5-crypt';
  if (hash.startsWith('$5$') || hash.startsWith('$6$')) return 'SHA-crypt';
  if (hash.startsWith('$2')) return 'malformed bcrypt';
  return 'crypt or plain text';
}
