/**
 * A push rule's durable queue: one small file per push or delete still to send, under
 * `_berth/replication/<rule>/queue/`, named so that name order is the order they happened
 * (time, then a per-process sequence). An entry is removed only once the remote took it, so a
 * restart (or a crash) loses nothing already queued, and any instance on the storage can send it.
 * docs/decisions.md, "Replication", says why storage and not the metadata database.
 */
import { randomUUID } from 'node:crypto';
import * as layout from '../registry/layout.js';
import type { Digest } from '../registry/digest.js';
import { childPath, unlessMissing, type StorageDriver } from '../storage/driver.js';

export interface QueueEntry {
  action: 'push' | 'delete';
  repository: string;
  digest: Digest;
  /** push: the tag it was pushed to (none: by digest) */
  tag?: string;
  /** ms since the epoch, when it was queued */
  at: number;
}

export class PushQueue {
  private sequence = 0;
  private readonly dir: string;

  constructor(
    private readonly driver: StorageDriver,
    rule: string,
  ) {
    this.dir = layout.replicationQueue(rule);
  }

  async add(entry: QueueEntry): Promise<void> {
    const name = `${String(entry.at).padStart(15, '0')}-${String(this.sequence++ % 1e9).padStart(9, '0')}-${randomUUID()}.json`;
    await this.driver.putContent(childPath(this.dir, name), Buffer.from(JSON.stringify(entry)));
  }

  /** the names of the entries waiting, oldest first */
  async names(): Promise<string[]> {
    return (await unlessMissing(this.driver.listNames(this.dir))) ?? [];
  }

  /** the entry, or undefined when it is gone (sent by another instance) or unreadable */
  async read(name: string): Promise<QueueEntry | undefined> {
    const content = await unlessMissing(this.driver.getContent(childPath(this.dir, name)));
    if (!content) return undefined;
    try {
      return JSON.parse(content.toString('utf8')) as QueueEntry;
    } catch {
      return undefined;
    }
  }

  async remove(name: string): Promise<void> {
    await unlessMissing(this.driver.delete(childPath(this.dir, name)));
  }
}
