/**
 * `auth.access`: berth's own access rules. Repository globs (`**`, `team/*`, `team/app`) map
 * subjects (a user name, `group:NAME` for the members of a group the OpenID Provider names, `*`
 * for any authenticated user, `anonymous` for requests without credentials) to actions. The most
 * specific glob that matches a repository decides alone, whatever the order of the file
 * (specificity below); within it, a user gets the union of their own entry, their groups' entries
 * and `*` (htpasswd users have no groups). Without `auth.access`, every authenticated user may do
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
export const GROUP_PREFIX = 'group:';

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

  /** the actions `user` (undefined: anonymous), member of `groups`, may take on repository `name` */
  actions(user: string | undefined, name: string, groups: readonly string[] = []): Set<RepositoryAction> {
    const rule = this.rules.find((r) => r.pattern.test(name));
    const out = new Set<RepositoryAction>();
    if (!rule) return out;
    for (const list of entriesOf(rule, user, groups)) for (const action of list ?? []) out.add(action);
    return out;
  }

  allows(user: string | undefined, request: AccessRequest, groups: readonly string[] = []): boolean {
    if (request.type === 'registry') {
      // the catalog: any authenticated user; it lists only what the user may pull
      return request.name === 'catalog' && user !== undefined;
    }
    if (request.type !== 'repository') return false;
    return this.actions(user, request.name, groups).has(request.action as RepositoryAction);
  }

  /** true when `user` may pull every repository (the `**` rule, or no rules at all, grants it) */
  pullsEverything(user: string | undefined, groups: readonly string[] = []): boolean {
    return this.rules.every((r) => entriesOf(r, user, groups).some((list) => list?.includes('pull'))) && this.rules.some((r) => r.glob === '**');
  }

  /** true when anonymous requests are allowed anything anywhere */
  allowsAnonymous(): boolean {
    return this.rules.some((r) => (r.users[ANONYMOUS] ?? []).length > 0);
  }
}

/** the entries of `rule` that apply to the caller: anonymous's alone, or the user's, their groups' and `*` */
function entriesOf(rule: Rule, user: string | undefined, groups: readonly string[]): (RepositoryAction[] | undefined)[] {
  if (user === undefined) return [rule.users[ANONYMOUS]];
  // a user name never stands for a group (sign-in refuses such names too)
  const own = user.startsWith(GROUP_PREFIX) ? undefined : rule.users[user];
  return [own, ...groups.map((g) => rule.users[GROUP_PREFIX + g]), rule.users['*']];
}
