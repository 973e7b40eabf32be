/**
 * `auth.access`: berth's own access rules. Repository globs (`**`, `team/*`, `team/app`) map users
 * (a name, `*` for any authenticated user, `anonymous` for requests without credentials) to
 * actions. The most specific glob that matches a repository decides alone, whatever the order of
 * the file (specificity below); within it, a user gets the union of their own entry and `*`. Without `auth.access`, every authenticated user may do
 * everything and anonymous requests nothing.
 */
import { compareGlobs, repositoryGlob } from '../registry/names.js';
import { REPOSITORY_ACTIONS, type AccessRequest, type RepositoryAction } from './access.js';

export type AccessRules = Record<string, Record<string, RepositoryAction[]>>;

interface Rule {
  glob: string;
  pattern: RegExp;
  users: Record<string, RepositoryAction[]>;
}

export const ANONYMOUS = 'anonymous';

export class AccessPolicy {
  private readonly rules: Rule[];

  /** undefined rules: everything for authenticated users */
  constructor(rules: AccessRules | undefined) {
    this.rules =
      rules === undefined
        ? [{ glob: '**', pattern: /^.*$/, users: { '*': [...REPOSITORY_ACTIONS] } }]
        : Object.entries(rules)
            .map(([glob, users]) => ({ glob, pattern: repositoryGlob(glob), users }))
            .sort((a, b) => compareGlobs(a.glob, b.glob));
  }

  /** the actions `user` (undefined: anonymous) may take on repository `name` */
  actions(user: string | undefined, name: string): Set<RepositoryAction> {
    const rule = this.rules.find((r) => r.pattern.test(name));
    const out = new Set<RepositoryAction>();
    if (!rule) return out;
    const entries = user === undefined ? [rule.users[ANONYMOUS]] : [rule.users[user], rule.users['*']];
    for (const list of entries) for (const action of list ?? []) out.add(action);
    return out;
  }

  allows(user: string | undefined, request: AccessRequest): boolean {
    if (request.type === 'registry') {
      // the catalog: any authenticated user; it lists only what the user may pull
      return request.name === 'catalog' && user !== undefined;
    }
    if (request.type !== 'repository') return false;
    return this.actions(user, request.name).has(request.action as RepositoryAction);
  }

  /** true when `user` may pull every repository (the `**` rule, or no rules at all, grants it) */
  pullsEverything(user: string | undefined): boolean {
    return this.rules.every((r) => {
      const entries = user === undefined ? [r.users[ANONYMOUS]] : [r.users[user], r.users['*']];
      return entries.some((list) => list?.includes('pull'));
    }) && this.rules.some((r) => r.glob === '**');
  }

  /** true when anonymous requests are allowed anything anywhere */
  allowsAnonymous(): boolean {
    return this.rules.some((r) => (r.users[ANONYMOUS] ?? []).length > 0);
  }
}
