/**
 * Which policies apply to a repository. Each policy names repository globs. For immutable tags and
 * signatures, the most specific policy that sets the aspect decides alone (as in auth.access: an
 * exact name beats `prod/*`, which beats `prod/**`). Quotas add up instead: every quota whose globs
 * match the repository holds, each counted over all the repositories its globs match.
 */
import { compareGlobs, repositoryGlob } from '../registry/names.js';
import type { PolicyOptions } from './options.js';

export interface MatchedPolicy {
  /** where the policy came from, for messages and audit records: `policies[2] (prod/**)` */
  readonly source: string;
  readonly options: PolicyOptions;
  matches(repository: string): boolean;
}

type Aspect = 'immutabletags' | 'signatures';

export class PolicySet {
  /** one entry per glob of each policy, most specific glob first */
  private readonly byGlob: { glob: string; pattern: RegExp; policy: MatchedPolicy }[];
  readonly policies: MatchedPolicy[];

  constructor(options: PolicyOptions[] = []) {
    this.policies = options.map((o, i) => {
      const patterns = o.repositories.map(repositoryGlob);
      return { source: `policies[${i}] (${o.repositories.join(', ')})`, options: o, matches: (name: string) => patterns.some((p) => p.test(name)) };
    });
    this.byGlob = this.policies
      .flatMap((policy) => policy.options.repositories.map((glob) => ({ glob, pattern: repositoryGlob(glob), policy })))
      .sort((a, b) => compareGlobs(a.glob, b.glob));
  }

  get empty(): boolean {
    return this.policies.length === 0;
  }

  /** the policy that decides `aspect` for `repository`, if any sets it */
  deciding(repository: string, aspect: Aspect): MatchedPolicy | undefined {
    return this.byGlob.find((g) => g.policy.options[aspect] !== undefined && g.pattern.test(repository))?.policy;
  }

  /** every policy with a quota that holds for `repository` */
  quotas(repository: string): MatchedPolicy[] {
    return this.policies.filter((p) => p.options.quota !== undefined && p.matches(repository));
  }
}
