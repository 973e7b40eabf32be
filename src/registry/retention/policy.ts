/**
 * Retention policies (storage.maintenance.retention.policies): which policy governs a repository
 * and which of its tags a policy deletes. Pure decisions over times; index.ts reads storage.
 *
 * - A repository is governed by the first policy (in the file's order) with a glob that matches it;
 *   one that no glob matches is left alone.
 * - A tag is deleted when every tag rule of the policy holds (`tagsolderthan`: pushed longer ago;
 *   `notpulledfor`: neither pushed nor pulled for that long) and no keep rule protects it (among
 *   the `newest` tags by push time, or matching one of `tags`, whole-name regular expressions).
 * - An untagged manifest (no remaining tag reaches it, as garbage collection's --delete-untagged
 *   decides) is deleted when it was pushed longer than `untaggedolderthan` ago.
 */
import { repositoryGlob } from '../names.js';

export interface RetentionPolicy {
  /** repository globs: `*` within a path component, `**` any number of components */
  repositories: string[];
  keep: { newest?: number; tags?: string[] };
  /** durations in ms */
  delete: { tagsolderthan?: number; notpulledfor?: number; untaggedolderthan?: number };
}

export interface CompiledPolicy extends RetentionPolicy {
  matches(name: string): boolean;
  keepsTag(tag: string): boolean;
}

export function compilePolicies(policies: readonly RetentionPolicy[]): CompiledPolicy[] {
  return policies.map((policy) => {
    const globs = policy.repositories.map(repositoryGlob);
    const tags = (policy.keep.tags ?? []).map((source) => new RegExp(`^(?:${source})$`));
    return { ...policy, matches: (name) => globs.some((g) => g.test(name)), keepsTag: (tag) => tags.some((t) => t.test(tag)) };
  });
}

/** the policy that governs `name`, if any */
export function policyFor(policies: readonly CompiledPolicy[], name: string): CompiledPolicy | undefined {
  return policies.find((p) => p.matches(name));
}

export interface TagFacts {
  tag: string;
  /** the push time of the manifest it names (ms since the epoch) */
  pushed: number;
  /** the last pull of that manifest, if recorded */
  pulled?: number;
}

/** the tags `policy` deletes at `now`, with the reason for each */
export function tagsToDelete(policy: CompiledPolicy, tags: readonly TagFacts[], now: number): { tag: string; reason: string }[] {
  const { tagsolderthan, notpulledfor } = policy.delete;
  if (tagsolderthan === undefined && notpulledfor === undefined) return [];
  const newest = new Set(
    [...tags]
      .sort((a, b) => b.pushed - a.pushed || (a.tag < b.tag ? 1 : -1))
      .slice(0, policy.keep.newest ?? 0)
      .map((t) => t.tag),
  );
  const out: { tag: string; reason: string }[] = [];
  for (const facts of tags) {
    if (newest.has(facts.tag) || policy.keepsTag(facts.tag)) continue;
    const reasons: string[] = [];
    if (tagsolderthan !== undefined) {
      if (now - facts.pushed <= tagsolderthan) continue;
      reasons.push(`pushed ${ago(now - facts.pushed)} ago`);
    }
    if (notpulledfor !== undefined) {
      const used = Math.max(facts.pushed, facts.pulled ?? 0);
      if (now - used <= notpulledfor) continue;
      reasons.push(facts.pulled === undefined ? 'never pulled' : `last pulled ${ago(now - facts.pulled)} ago`);
    }
    out.push({ tag: facts.tag, reason: reasons.join(', ') });
  }
  return out;
}

/** a duration for people: 3d4h, 5h, 12m, 40s */
function ago(ms: number): string {
  const h = Math.floor(ms / 3_600_000);
  if (h >= 48) return `${Math.floor(h / 24)}d${h % 24 ? `${h % 24}h` : ''}`;
  if (h >= 1) return `${h}h`;
  return ms >= 60_000 ? `${Math.floor(ms / 60_000)}m` : `${Math.floor(ms / 1000)}s`;
}
