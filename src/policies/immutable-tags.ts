/**
 * Immutable tags (`policies[].immutabletags`): tag globs of which a tag that matches one and no `!`
 * glob never moves to another digest and is never deleted, nor is the manifest it names. The most
 * specific policy that sets `immutabletags` decides for a repository (match.ts).
 */
import type { PolicyOptions } from './options.js';
import { PolicySet } from './match.js';

/** a tag glob: `*` is any run of characters (tags have no `/`) */
function tagPattern(glob: string): RegExp {
  return new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\-]/g, '\\$&').replace(/\*/g, '.*')}$`);
}

export class ImmutableTags {
  private readonly compiled = new Map<string, { keep: { glob: string; pattern: RegExp }[]; except: RegExp[] }>();

  constructor(private readonly set: PolicySet) {}

  /** whether a policy sets immutable tags for `repository` */
  applies(repository: string): boolean {
    return this.set.deciding(repository, 'immutabletags') !== undefined;
  }

  /** the rule that keeps `tag` of `repository` fixed, as a person reads it (`v* of policies[0] (prod/**)`); undefined when the tag may move */
  rule(repository: string, tag: string): string | undefined {
    const policy = this.set.deciding(repository, 'immutabletags');
    if (!policy) return undefined;
    const globs = this.globsOf(policy.source, policy.options.immutabletags!);
    const kept = globs.keep.find((g) => g.pattern.test(tag));
    if (!kept || globs.except.some((p) => p.test(tag))) return undefined;
    return `immutable tag rule "${kept.glob}" of ${policy.source}`;
  }

  private globsOf(source: string, globs: string[]) {
    let compiled = this.compiled.get(source);
    if (!compiled) {
      compiled = {
        keep: globs.filter((g) => !g.startsWith('!')).map((glob) => ({ glob, pattern: tagPattern(glob) })),
        except: globs.filter((g) => g.startsWith('!')).map((g) => tagPattern(g.slice(1))),
      };
      this.compiled.set(source, compiled);
    }
    return compiled;
  }
}

/** for the passes that delete tags (retention, expiry): true for a tag that must stay; undefined when no policy sets immutable tags */
export function fixedTags(policies: PolicyOptions[] | undefined): ((repository: string, tag: string) => boolean) | undefined {
  if (!policies?.some((p) => p.immutabletags)) return undefined;
  const tags = new ImmutableTags(new PolicySet(policies));
  return (repository, tag) => tags.rule(repository, tag) !== undefined;
}
