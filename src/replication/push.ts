/**
 * A push rule: every local push of a manifest (and, with `deletes`, every delete) in a matching
 * repository and tag is queued in storage (queue.ts), and a task on the scheduler sends the queue
 * in order: for a push, the blobs the remote lacks, the children of an index, then the manifest
 * to its tag (or digest); for a delete, the manifest's DELETE. A failure stops the queue where it
 * is and the rule waits, doubling from 1 s up to 5 min (on the scheduler's clock), before it
 * tries again; an entry the remote keeps refusing is given up after MAX_ATTEMPTS, logged.
 */
import type { Logger } from 'pino';
import type { EventInput } from '../notifications/events.js';
import { UpstreamUnavailableError } from '../proxy/errors.js';
import type { Clock } from '../scheduler/clock.js';
import type { PeriodicTask } from '../scheduler/scheduler.js';
import { isDigest, type Digest } from '../registry/digest.js';
import { parseManifest } from '../registry/manifests/index.js';
import { storedManifest, type ReplicationCore } from './core.js';
import { PushQueue, type QueueEntry } from './queue.js';
import type { Remote } from './remote.js';
import { RuleFilter, type ReplicationRule } from './rules.js';
import type { RuleFigures } from './stats.js';
import { readState, writeState, type RuleState } from './state.js';

/** how often the queue is looked at while nothing fails */
export const PUSH_POLL_MS = 1000;
const FIRST_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 5 * 60_000;
/** sends of one entry the remote refuses (not: does not answer) before it is given up */
const MAX_ATTEMPTS = 10;
/** an OCI image manifest's config media type: what the referrers API reports as its artifactType when it has none */
function configType(content: Buffer): string | undefined {
  try {
    const type = (JSON.parse(content.toString('utf8')) as { config?: { mediaType?: unknown } }).config?.mediaType;
    return typeof type === 'string' ? type : undefined;
  } catch {
    return undefined;
  }
}

/** the media type of blob events: blobs go with their manifest */
const BLOB_EVENT_TYPE = 'application/octet-stream';

export class PushReplication {
  private readonly filter: RuleFilter;
  private readonly queue: PushQueue;
  private failures = 0;
  private retryAt = 0;
  private lastError?: { at: string; message: string };
  private lastSuccess?: string;
  /** failed sends of the entry at the head of the queue */
  private attempts = new Map<string, number>();
  private stateLoaded = false;
  /** queue writes under way: a shutdown waits for them (the registry stopped serving first) */
  private readonly adding = new Set<Promise<void>>();

  constructor(
    private readonly rule: ReplicationRule,
    private readonly remote: Remote,
    private readonly core: ReplicationCore,
    private readonly figures: RuleFigures,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    this.filter = new RuleFilter(rule);
    this.queue = new PushQueue(core.driver, rule.name);
  }

  /** an event of the edge: queued when the rule replicates it (never throws, never awaited by the request) */
  observe(event: EventInput): void {
    const entry = this.entryOf(event);
    if (!entry) return;
    this.figures.pending++;
    const adding = this.queue
      .add(entry)
      .catch((err) => this.logger.error({ err, ...entry }, `replication ${this.rule.name}: could not queue the ${entry.action} of ${entry.repository}@${entry.digest}; it will not be replicated`))
      .finally(() => this.adding.delete(adding));
    this.adding.add(adding);
  }

  /** resolves once every event heard so far is in the queue's storage */
  async queued(): Promise<void> {
    await Promise.all([...this.adding]);
  }

  private entryOf({ action, target }: EventInput): QueueEntry | undefined {
    if (!this.filter.repository(target.repository) || !isDigest(target.digest)) return undefined;
    const at = this.clock.now();
    if (action === 'delete') return this.rule.deletes ? { action, repository: target.repository, digest: target.digest, at } : undefined;
    if (action !== 'push' || target.mediaType === BLOB_EVENT_TYPE) return undefined;
    if (target.tag !== undefined && !this.filter.tag(target.tag)) return undefined;
    return { action, repository: target.repository, digest: target.digest, tag: target.tag, at };
  }

  task(): PeriodicTask {
    return { name: `replication ${this.rule.name}`, interval: PUSH_POLL_MS, firstDelay: 0, run: (signal) => this.drain(signal) };
  }

  /** sends the queue in order until it is empty or a send fails */
  async drain(signal?: AbortSignal): Promise<void> {
    if (!this.stateLoaded) await this.loadState();
    if (this.clock.now() < this.retryAt) return;
    const names = await this.queue.names();
    this.figures.pending = names.length;
    for (const name of names) {
      signal?.throwIfAborted();
      const entry = await this.queue.read(name);
      try {
        if (entry) await this.send(entry, signal);
      } catch (err) {
        if (signal?.aborted) throw err;
        if (!(await this.failed(name, entry!, err))) return;
      }
      await this.queue.remove(name);
      this.attempts.delete(name);
      this.figures.pending = Math.max(0, this.figures.pending - 1);
      if (entry) this.figures.sent++;
      this.lastSuccess = new Date(this.clock.now()).toISOString();
      if (this.failures > 0 || this.lastError) await this.succeeded();
    }
  }

  private async send(entry: QueueEntry, signal?: AbortSignal): Promise<void> {
    if (entry.action === 'delete') return this.remote.deleteManifest(entry.repository, entry.digest, signal);
    const sent = await this.pushManifest(entry.repository, entry.digest, entry.tag, signal);
    if (!sent) this.logger.debug({ ...entry }, `replication ${this.rule.name}: ${entry.repository}@${entry.digest} is gone here; nothing to send`);
  }

  /** the manifest's blobs and children the remote lacks, then the manifest; false when it is not stored here any more */
  private async pushManifest(name: string, digest: Digest, tag: string | undefined, signal?: AbortSignal): Promise<boolean> {
    const stored = await storedManifest(this.core.manifests, name, digest);
    if (!stored) return false;
    if (tag === undefined && (await this.remote.hasManifest(name, digest, signal))) return true;
    const manifest = await parseManifest(stored.mediaType, stored.content, { signal });
    for (const child of manifest.manifests) {
      if (!(await this.remote.hasManifest(name, child.digest, signal))) await this.pushManifest(name, child.digest, undefined, signal);
    }
    for (const blob of manifest.blobs) {
      if (await this.remote.hasBlob(name, blob.digest, signal)) continue;
      const size = await this.core.blobs.storedSize(blob.digest);
      if (size === undefined) throw new Error(`${name}@${digest} references ${blob.digest}, which is not stored here`);
      await this.remote.pushBlob(name, blob.digest, size, () => this.core.blobs.open(blob.digest), signal);
    }
    await this.remote.putManifest(name, tag ?? digest, stored.mediaType, stored.content, signal);
    if (manifest.subject) await this.remote.addToReferrersTag(name, manifest.subject.digest, { mediaType: stored.mediaType, digest, size: stored.content.length, artifactType: manifest.artifactType ?? configType(stored.content), annotations: manifest.annotations }, signal);
    return true;
  }

  /** a failed send: the rule backs off; true when the entry is given up (and so removed) */
  private async failed(name: string, entry: QueueEntry, err: unknown): Promise<boolean> {
    this.failures++;
    this.figures.sendFailures++;
    const message = (err as Error).message;
    const now = this.clock.now();
    this.lastError = { at: new Date(now).toISOString(), message };
    this.figures.lastErrorSeconds = Math.floor(now / 1000);
    const attempts = (this.attempts.get(name) ?? 0) + 1;
    this.attempts.set(name, attempts);
    // a remote that does not answer holds the queue for as long as it takes; a refusal, MAX_ATTEMPTS times
    if (!(err instanceof UpstreamUnavailableError) && attempts >= MAX_ATTEMPTS) {
      this.logger.error({ err, ...entry, attempts }, `replication ${this.rule.name}: gave up the ${entry.action} of ${entry.repository}@${entry.digest} after ${attempts} attempts`);
      return true;
    }
    const backoff = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.min(this.failures - 1, 20));
    this.retryAt = now + backoff;
    this.logger.warn({ err, ...entry, retryInMs: backoff }, `replication ${this.rule.name}: could not send the ${entry.action} of ${entry.repository}@${entry.digest}; trying again in ${Math.round(backoff / 1000)}s`);
    await this.saveState().catch(() => undefined);
    return false;
  }

  private async succeeded(): Promise<void> {
    this.failures = 0;
    this.retryAt = 0;
    this.lastError = undefined;
    this.figures.lastErrorSeconds = 0;
    await this.saveState().catch(() => undefined);
  }

  private async loadState(): Promise<void> {
    this.stateLoaded = true;
    const state = await readState(this.core.driver, this.rule.name).catch(() => undefined);
    if (state?.lastError) this.lastError = state.lastError;
    this.lastSuccess = state?.lastSuccess;
  }

  private saveState(): Promise<void> {
    const state: RuleState = { rule: this.rule.name, direction: 'push', figures: { ...this.figures }, lastError: this.lastError, lastSuccess: this.lastSuccess };
    if (this.retryAt > 0) state.retryAt = new Date(this.retryAt).toISOString();
    return writeState(this.core.driver, state);
  }
}
