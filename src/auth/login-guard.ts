/**
 * Password guessing: failed logins draw from two token buckets, one per user and one per client
 * address (auth.failedlogins: 10 failures at once, then one more every 6 s; burst 0 turns it off). Before a password is checked, both are
 * looked at: when either is empty the login answers 429 TOOMANYREQUESTS whatever the password, so
 * a limited guess costs no bcrypt and tells nothing (the right password is refused the same way).
 * Successful logins draw nothing. The buckets are the rate limiter's: in Redis, shared by every
 * instance, when `ratelimit` and `redis` are configured; else per process.
 *
 * The per-user bucket lets anyone lock a user out for a minute by failing on purpose; the
 * per-address one alone would let a botnet guess freely. Both it is (docs/security.md).
 */
import { RegistryError } from '../registry/errors.js';
import type { BucketOptions, RateLimiter } from './ratelimit.js';

/** auth.failedlogins as token buckets */
export function failedLoginBuckets(options: { burst: number; every: number }): BucketOptions {
  return { burst: options.burst, rate: 1000 / options.every };
}

export class LoginGuard {
  /** `buckets`: undefined for no limit */
  constructor(private readonly buckets: RateLimiter | undefined) {}

  /** the result of `check` (a password verification), unless the user or the address is limited */
  async verify(user: string, address: string, check: () => Promise<boolean>): Promise<boolean> {
    if (!this.buckets) return check();
    const buckets = this.buckets;
    const keys = [`login-user:${user}`, `login-address:${address}`];
    const verdicts = await Promise.all(keys.map((key) => buckets.peek(key)));
    const wait = Math.max(0, ...verdicts.map((v) => (v.allowed ? 0 : v.retryAfterSeconds)));
    if (wait > 0) {
      throw new RegistryError('TOOMANYREQUESTS', `too many failed logins for this user or from this address: try again in ${wait}s`, {
        headers: { 'retry-after': String(wait) },
      });
    }
    const ok = await check();
    if (!ok) await Promise.all(keys.map((key) => buckets.take(key)));
    return ok;
  }
}
