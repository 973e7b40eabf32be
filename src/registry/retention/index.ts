/**
 * One retention pass: per repository, the tags its policy deletes, then the untagged manifests old
 * enough to go (policy.ts says which). Each deletion emits the delete event a DELETE through the
 * API would. Blobs are not touched: what the deleted manifests held is freed by garbage collection.
 * See README.md.
 */
import { randomUUID } from 'node:crypto';
import type { EventInput, EventSink } from '../../notifications/events.js';
import type { StorageDriver } from '../../storage/driver.js';
import { unlessMissing } from '../../storage/driver.js';
import { readActivity, type Activity } from '../activity.js';
import type { Digest } from '../digest.js';
import { whileMarked } from '../gc/deleting.js';
import { readGraph } from '../gc/graph.js';
import { REPOSITORIES_AT_ONCE } from '../gc/index.js';
import { forEach } from '../pool.js';
import { repositoryNames } from '../gc/repositories.js';
import { readTouch } from '../gc/touch.js';
import { collectUntagged } from '../gc/untagged.js';
import * as layout from '../layout.js';
import { readLink } from '../links.js';
import { policyFor, tagsToDelete, type CompiledPolicy } from './policy.js';
import { reindexRepository } from '../indexing/reindex.js';
import type { RepositorySink } from '../indexing/sink.js';

export interface RetentionOptions {
  policies: readonly CompiledPolicy[];
  now: number;
  /** report what would go, delete nothing, emit nothing */
  dryRun: boolean;
  /** one line per tag and manifest deleted (or that would be) */
  report?: (line: string) => void;
  /** where the delete events go */
  events?: EventSink;
  /** stops the pass between repositories (shutdown) */
  signal?: AbortSignal;
  /** the metadata index, told of the repositories whose tags or manifests this pass deleted */
  index?: RepositorySink;
  /** tags that are never deleted whatever the policy says (immutable tags, src/policies/): true to keep */
  fixedTag?(repository: string, tag: string): boolean;
}

export interface RetentionSummary {
  repositories: number;
  tagsDeleted: number;
  manifestsDeleted: number;
}

export async function applyRetention(driver: StorageDriver, options: RetentionOptions): Promise<RetentionSummary> {
  const summary: RetentionSummary = { repositories: 0, tagsDeleted: 0, manifestsDeleted: 0 };
  await forEach(repositoryNames(driver), REPOSITORIES_AT_ONCE, async (name) => {
    options.signal?.throwIfAborted();
    const policy = policyFor(options.policies, name);
    if (!policy) return;
    const pass = new RepositoryPass(driver, name, policy, options);
    const tags = await pass.tags();
    const manifests = await pass.untagged();
    if (options.index && !options.dryRun && tags + manifests > 0) await reindexRepository(driver, options.index, name);
    // added once both are known: `summary.n += await ...` reads summary.n before the wait and writes
    // back over what the repositories done meanwhile added
    summary.repositories++;
    summary.tagsDeleted += tags;
    summary.manifestsDeleted += manifests;
  });
  return summary;
}

/** the summary as one line */
export function retentionLine(summary: RetentionSummary, dryRun: boolean): string {
  const verb = dryRun ? 'would delete' : 'deleted';
  return `retention${dryRun ? ' (dry run)' : ''}: ${summary.repositories} repositories under a policy, ${verb} ${summary.tagsDeleted} tags and ${summary.manifestsDeleted} untagged manifests (blobs are freed by the collection)`;
}

class RepositoryPass {
  private readonly activity = new Map<string, Promise<Activity>>();
  /** tags this pass deleted (or, in a dry run, would have) */
  private readonly deletedTags = new Set<string>();
  private readonly report: (line: string) => void;

  constructor(
    private readonly driver: StorageDriver,
    private readonly name: string,
    private readonly policy: CompiledPolicy,
    private readonly options: RetentionOptions,
  ) {
    this.report = options.report ?? (() => {});
  }

  /** deletes the tags the policy says, unless pushed again meanwhile; returns how many */
  async tags(): Promise<number> {
    const graph = await readGraph(this.driver, this.name);
    const facts = [];
    for (const [tag, digest] of graph.tags) {
      if (!graph.manifests.has(digest)) continue; // a tag naming a missing manifest is garbage collection's
      if (this.options.fixedTag?.(this.name, tag)) continue; // it stays, and so does what it reaches
      const { pushed, pulled } = await this.activityOf(digest);
      facts.push({ tag, pushed: pushed ?? 0, pulled });
    }
    for (const { tag, reason } of tagsToDelete(this.policy, facts, this.options.now)) {
      const digest = graph.tags.get(tag)!;
      if (!this.options.dryRun && !(await this.deleteTag(tag, digest))) continue;
      this.deletedTags.add(tag);
      this.report(`${this.name}: tag ${tag} (${digest}) ${this.options.dryRun ? 'would be deleted' : 'deleted'}: ${reason}`);
      if (!this.options.dryRun) this.emit({ digest, repository: this.name, tag });
    }
    return this.deletedTags.size;
  }

  /**
   * Deletes the tag, checked under a deletion marker (../gc/deleting.ts): it must still name the
   * digest, and the digest must not have been pushed (its push time) or used (its use record)
   * since the pass read them. A push after the check waits for the marker and writes the tag again.
   */
  private async deleteTag(tag: string, digest: Digest): Promise<boolean> {
    const [decided, touched] = await Promise.all([this.activityOf(digest), readTouch(this.driver, digest)]);
    return whileMarked(this.driver, this.name, async (marked) => {
      const [current, activity, touch] = await Promise.all([
        readLink(this.driver, layout.tagCurrentLink(this.name, tag)),
        readActivity(this.driver, this.name, digest),
        readTouch(this.driver, digest),
      ]);
      if (current !== digest || activity.pushed !== decided.pushed || touch?.token !== touched?.token || !marked.fresh()) return false; // pushed again meanwhile
      await unlessMissing(this.driver.delete(layout.tagDir(this.name, tag)));
      return true;
    });
  }

  /**
   * deletes the manifests no remaining tag reaches that were pushed (or referenced by a push) longer
   * than untaggedolderthan ago, by online collection's protocol (../gc/untagged.ts): parents before
   * children, a manifest that stays keeps what it reaches, one a PUT used meanwhile is put back
   */
  async untagged(): Promise<number> {
    const maxAge = this.policy.delete.untaggedolderthan;
    if (maxAge === undefined) return 0;
    const graph = await readGraph(this.driver, this.name);
    // a dry run deleted no tag: leave out those it would have
    const tags = this.options.dryRun ? new Map([...graph.tags].filter(([tag]) => !this.deletedTags.has(tag))) : graph.tags;
    const pushedAt = new Map<Digest, number>();
    const result = await collectUntagged(this.driver, { ...graph, tags }, {
      dryRun: this.options.dryRun,
      spare: async (digest, _link, touch) => {
        const { pushed } = await readActivity(this.driver, this.name, digest);
        const used = Math.max(pushed ?? -Infinity, touch?.modTime.getTime() ?? -Infinity);
        pushedAt.set(digest, used);
        return this.options.now - used <= maxAge;
      },
    });
    for (const digest of result.deleted) {
      this.report(`${this.name}: untagged manifest ${digest} ${this.options.dryRun ? 'would be deleted' : 'deleted'}: pushed ${new Date(pushedAt.get(digest)!).toISOString()}`);
      if (!this.options.dryRun) this.emit({ digest, repository: this.name });
    }
    for (const digest of result.restored) this.report(`${this.name}: untagged manifest ${digest} used by a push meanwhile, put back`);
    return result.deleted.length;
  }

  private activityOf(digest: Digest): Promise<Activity> {
    let activity = this.activity.get(digest);
    if (!activity) {
      activity = readActivity(this.driver, this.name, digest);
      this.activity.set(digest, activity);
    }
    return activity;
  }

  /** the delete event of a DELETE through the API; the request is the retention pass's own */
  private emit(target: { digest: string; repository: string; tag?: string }): void {
    const events = this.options.events;
    if (!events?.active) return;
    const event: EventInput = {
      action: 'delete',
      target,
      request: { id: randomUUID(), addr: '', host: '', method: 'DELETE', useragent: 'berth-retention' },
      actor: {},
    };
    events.emit(event);
  }
}
