/**
 * The policies as the core asks them (ManifestGuard in registry/manifest-store.ts): immutable tags
 * and quotas. A denial is a 403 DENIED naming the rule; the edge records it in the audit log, as
 * every 403.
 */
import { RegistryError } from '../registry/errors.js';
import type { ManifestGuard, Push, Refusal } from '../registry/manifest-store.js';
import { ImmutableTags } from './immutable-tags.js';
import type { PolicySet } from './match.js';
import type { Quotas } from './quota.js';

export class PolicyGuard implements ManifestGuard {
  private readonly tags: ImmutableTags;

  constructor(
    set: PolicySet,
    /** undefined when no policy sets a quota */
    private readonly quotas: Quotas | undefined,
  ) {
    this.tags = new ImmutableTags(set);
  }

  fixedTag(name: string, tag: string): string | undefined {
    return this.tags.rule(name, tag);
  }

  fixesTags(name: string): boolean {
    return this.tags.applies(name);
  }

  refused(refusal: Refusal): RegistryError {
    const { name, tag, rule } = refusal;
    return 'move' in refusal
        ? new RegistryError('DENIED', `tag ${tag} of ${name} is immutable (${rule}): it names ${refusal.move.from} and cannot be moved to ${refusal.move.to}; push a new tag instead`, {
            detail: { rule, tag, digest: refusal.move.from },
          })
        : new RegistryError('DENIED', `manifest ${refusal.delete} of ${name} cannot be deleted: the immutable tag ${tag} names it (${rule})`, { detail: { rule, tag, digest: refusal.delete } });
  }

  admit<T>(name: string, push: Push, store: () => Promise<T>): Promise<T> {
    return this.quotas ? this.quotas.admit(name, push, store) : store();
  }
}
