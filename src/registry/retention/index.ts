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
import { BlobStore } from '../blobs.js';
import type { Digest } from '../digest.js';
import { RegistryError } from '../errors.js';
import { readGraph, type RepositoryGraph } from '../gc/graph.js';
import { REPOSITORIES_AT_ONCE } from '../gc/index.js';
import { markRepository } from '../gc/mark.js';
import { forEach } from '../pool.js';
import { repositoryNames } from '../gc/repositories.js';
import * as layout from '../layout.js';
import { readLink } from '../links.js';
import { ManifestStore } from '../manifest-store.js';
import { TagStore } from '../tags.js';
import { policyFor, tagsToDelete, type CompiledPolicy } from './policy.js';

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
}

export interface RetentionSummary {
  repositories: number;
  tagsDeleted: number;
  manifestsDeleted: number;
}

export async function applyRetention(driver: StorageDriver, options: RetentionOptions): Promise<RetentionSummary> {
  const manifests = new ManifestStore(driver, new BlobStore(driver), new TagStore(driver), {});
  const summary: RetentionSummary = { repositories: 0, tagsDeleted: 0, manifestsDeleted: 0 };
  await forEach(repositoryNames(driver), REPOSITORIES_AT_ONCE, async (name) => {
    options.signal?.throwIfAborted();
    const policy = policyFor(options.policies, name);
    if (!policy) return;
    summary.repositories++;
    const pass = new RepositoryPass(driver, manifests, name, policy, options);
    summary.tagsDeleted += await pass.tags();
    summary.manifestsDeleted += await pass.untagged();
  });
  return summary;
}

/** the summary as one line */
export function retentionLine(summary: RetentionSummary, dryRun: boolean): string {
  const verb = dryRun ? 'would delete' : 'deleted';
  return `retention${dryRun ? ' (dry run)' : ''}: ${summary.repositories} repositories under a policy, ${verb} ${summary.tagsDeleted} tags and ${summary.manifestsDeleted} untagged manifests (blobs are freed by the collection)`;
}

class RepositoryPass {
  private graph?: RepositoryGraph;
  private readonly activity = new Map<string, Promise<Activity>>();
  private readonly deletedTags = new Set<string>();
  private readonly report: (line: string) => void;

  constructor(
    private readonly driver: StorageDriver,
    private readonly manifests: ManifestStore,
    private readonly name: string,
    private readonly policy: CompiledPolicy,
    private readonly options: RetentionOptions,
  ) {
    this.report = options.report ?? (() => {});
  }

  /** deletes the tags the policy says; returns how many */
  async tags(): Promise<number> {
    const graph = await this.readGraph();
    const facts = [];
    for (const [tag, digest] of graph.tags) {
      if (!graph.manifests.has(digest)) continue; // a tag naming a missing manifest is garbage collection's
      const { pushed, pulled } = await this.activityOf(digest);
      facts.push({ tag, pushed: pushed ?? 0, pulled });
    }
    for (const { tag, reason } of tagsToDelete(this.policy, facts, this.options.now)) {
      const digest = graph.tags.get(tag)!;
      this.report(`${this.name}: tag ${tag} (${digest}) ${this.options.dryRun ? 'would be deleted' : 'deleted'}: ${reason}`);
      this.deletedTags.add(tag);
      if (this.options.dryRun) continue;
      // pushed again meanwhile: the tag names another manifest now, or the same one pushed anew
      if ((await readLink(this.driver, layout.tagCurrentLink(this.name, tag))) !== digest) continue;
      if ((await readActivity(this.driver, this.name, digest)).pushed !== (await this.activityOf(digest)).pushed) continue;
      await unlessMissing(this.driver.delete(layout.tagDir(this.name, tag)));
      this.emit({ digest, repository: this.name, tag });
    }
    return this.deletedTags.size;
  }

  /** deletes the manifests no remaining tag reaches that were pushed longer than untaggedolderthan ago */
  async untagged(): Promise<number> {
    const maxAge = this.policy.delete.untaggedolderthan;
    if (maxAge === undefined) return 0;
    let candidates = await this.unreached(await this.readGraph(), maxAge);
    if (candidates.length === 0) return 0;
    if (!this.options.dryRun) {
      // read again just before deleting: a push since the first read may reach one of them now
      const again = new Set(await this.unreached(await readGraph(this.driver, this.name), maxAge));
      candidates = candidates.filter((digest) => again.has(digest));
    }
    let deleted = 0;
    for (const digest of candidates) {
      this.report(`${this.name}: untagged manifest ${digest} ${this.options.dryRun ? 'would be deleted' : 'deleted'}: pushed ${new Date((await this.activityOf(digest)).pushed!).toISOString()}`);
      if (!this.options.dryRun) {
        const gone = await this.manifests.delete(this.name, digest).then(
          () => true,
          (err: unknown) => {
            if (err instanceof RegistryError && (err.code === 'MANIFEST_UNKNOWN' || err.code === 'NAME_UNKNOWN')) return false; // deleted meanwhile
            throw err;
          },
        );
        if (!gone) continue;
        this.emit({ digest, repository: this.name });
      }
      deleted++;
    }
    return deleted;
  }

  /** the manifests no tag (but those this pass deleted) reaches, pushed before now - maxAge */
  private async unreached(graph: RepositoryGraph, maxAge: number): Promise<Digest[]> {
    const tags = new Map([...graph.tags].filter(([tag]) => !this.deletedTags.has(tag)));
    const { unkept } = markRepository({ ...graph, tags }, true, new Set(), () => {});
    const old: Digest[] = [];
    for (const digest of unkept) {
      this.activity.delete(digest); // a second read must see a push made since the first
      const { pushed } = await this.activityOf(digest);
      if (pushed !== undefined && this.options.now - pushed > maxAge) old.push(digest);
    }
    return old;
  }

  private async readGraph(): Promise<RepositoryGraph> {
    this.graph ??= await readGraph(this.driver, this.name);
    return this.graph;
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
