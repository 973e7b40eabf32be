/**
 * A soak client: a loop of random registry operations through the balancer until the deadline.
 * Pushes of images (layers uploaded monolithic, in one POST, in chunks that resume after a cut,
 * mounted from another repository, or found present by HEAD), multi-platform indexes with a
 * referrer, re-pushes and new tags of what it pushed (also after deleting it), pulls of anyone's
 * acknowledged manifests (through the Checker), deletes of its own manifests and of blobs no
 * manifest uses, uploads left open or cancelled. Each manifest answered 201 goes in the Ledger.
 * Tags and manifests have one owner (their digests are unique to it), so their history is the
 * sequence of that client's acknowledged requests.
 */
import { createHash } from 'node:crypto';
import { MiB, PatternBlob } from '../helpers/berth-process.js';
import type { Checker } from './checker.js';
import { underPolicy, type BlobRef, type Ledger, type ManifestRecord } from './ledger.js';
import type { Random } from './random.js';
import { CutError, type Reply, type Wire } from './wire.js';

export const REPOSITORIES = ['soak/a', 'soak/b', 'soak/c', 'ret/a', 'ret/b'];

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
const LAYER = 'application/vnd.oci.image.layer.v1.tar';
const EMPTY_JSON = Buffer.from('{}');
const EMPTY: BlobRef = { digest: sha256(EMPTY_JSON), size: 2, bytes: EMPTY_JSON };

function sha256(bytes: Buffer): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** a 5xx: the operation is cut short, as by a cut connection (whether a fault explains it is judged from Wire's log) */
export class Refused extends Error {
  constructor(readonly reply: Reply) {
    super(`${reply.status}`);
  }
}

/** a pull that faults kept from a verdict */
class Inconclusive extends Error {}

/** an answer the operation cannot go on from: a finding */
export class UnexpectedReply extends Error {}

export interface OpCounts {
  ok: number;
  /** cut by a fault (no answer, or a 5xx) */
  interrupted: number;
  /** an unexpected answer */
  failed: number;
}

export interface Shared {
  wire: Wire;
  ledger: Ledger;
  checker: Checker;
  ops: Map<string, OpCounts>;
  /** unexpected answers (the first ones, with details) */
  unexpected: string[];
  /** manifest pushes answered 201 */
  acknowledged: { count: number };
}

interface Top {
  repo: string;
  digest: string;
  tag: string;
}

function expect(reply: Reply, statuses: number[], what: string): Reply {
  if (statuses.includes(reply.status)) return reply;
  if (reply.status >= 500) throw new Refused(reply);
  throw new UnexpectedReply(`${what}: ${reply.status} ${reply.servedBy ?? 'haproxy'} ${reply.body.toString('utf8', 0, 300).replace(/\s+/g, ' ')}`);
}

function bytesOf(blob: BlobRef): Buffer {
  return blob.bytes ?? new PatternBlob(blob.size, blob.seed).bytes();
}

export class Client {
  private readonly tops: Top[] = [];
  private readonly referrers: { repo: string; digest: string }[] = [];
  private counter = 0;

  constructor(
    readonly id: number,
    private readonly shared: Shared,
    private readonly random: Random,
  ) {}

  async run(until: number): Promise<void> {
    const ops: [number, string, () => Promise<unknown>][] = [
      [26, 'push-image', () => this.pushImage()],
      [12, 'push-index', () => this.pushIndex()],
      [10, 're-push', () => this.rePush()],
      [5, 'tag-again', () => this.tagAgain()],
      [25, 'pull', () => this.pull()],
      [10, 'delete-manifest', () => this.deleteManifest()],
      [4, 'orphan-blob', () => this.orphanBlob()],
      [4, 'open-upload', () => this.openUpload()],
    ];
    const total = ops.reduce((n, [w]) => n + w, 0);
    while (Date.now() < until) {
      let r = this.random.next() * total;
      const [, name, op] = ops.find(([w]) => (r -= w) < 0) ?? ops[0];
      await this.count(name, op);
    }
  }

  private async count(name: string, op: () => Promise<unknown>): Promise<void> {
    const counts = this.shared.ops.get(name) ?? { ok: 0, interrupted: 0, failed: 0 };
    this.shared.ops.set(name, counts);
    try {
      await op();
      counts.ok++;
    } catch (err) {
      if (err instanceof CutError || err instanceof Refused || err instanceof Inconclusive) counts.interrupted++;
      else if (err instanceof UnexpectedReply) {
        counts.failed++;
        if (this.shared.unexpected.length < 100) this.shared.unexpected.push(`${new Date().toISOString()} client ${this.id} ${name}: ${err.message}`);
      } else throw err;
    }
  }

  private send(method: string, path: string, body?: Buffer, headers: Record<string, string> = {}): Promise<Reply> {
    return this.shared.wire.send(method, path, { body, headers: body ? { 'content-type': 'application/octet-stream', ...headers } : headers });
  }

  private path(location: string, digest?: string): string {
    const url = new URL(location, this.shared.wire.base);
    if (digest) url.searchParams.set('digest', digest);
    return `${url.pathname}${url.search}`;
  }

  // --- blobs -------------------------------------------------------------------------------

  private newLayer(): BlobRef {
    const size = this.random.next() < 0.03 ? this.random.int(5 * MiB, 9 * MiB) : this.random.int(200, 64 * 1024);
    const blob = new PatternBlob(size, this.random.bigint());
    return { digest: blob.digest(), size, seed: blob.seed };
  }

  /** a layer of a live manifest of another repository (to mount) or of `repo` (found by HEAD) */
  private borrowedLayer(repo: string): { blob: BlobRef; from: string } | undefined {
    const live = this.shared.ledger.live().filter((r) => r.blobs.length > 1);
    if (live.length === 0) return undefined;
    const rec = this.random.pick(live);
    return { blob: this.random.pick(rec.blobs.slice(1)), from: rec.repo === repo ? '' : rec.repo };
  }

  private async upload(repo: string, blob: BlobRef, mode: 'monolithic' | 'post' | 'chunked' | 'exists' | { from: string }): Promise<void> {
    if (mode === 'exists') {
      const head = expect(await this.send('HEAD', `/v2/${repo}/blobs/${blob.digest}`), [200, 404], 'HEAD blob');
      if (head.status === 200) return;
      mode = 'monolithic';
    }
    if (typeof mode === 'object') {
      const mount = expect(await this.send('POST', `/v2/${repo}/blobs/uploads/?mount=${blob.digest}&from=${mode.from}`), [201, 202], 'mount');
      if (mount.status === 201) return;
      expect(await this.send('PUT', this.path(mount.headers.get('location')!, blob.digest), bytesOf(blob)), [201], 'PUT blob after a refused mount');
      return;
    }
    if (mode === 'post') {
      const post = expect(await this.send('POST', `/v2/${repo}/blobs/uploads/?digest=${blob.digest}`, bytesOf(blob)), [201, 202], 'monolithic POST');
      if (post.status === 202) expect(await this.send('PUT', this.path(post.headers.get('location')!, blob.digest), bytesOf(blob)), [201], 'PUT blob');
      return;
    }
    const post = expect(await this.send('POST', `/v2/${repo}/blobs/uploads/`), [202], 'POST upload');
    let location = post.headers.get('location')!;
    if (mode === 'monolithic') {
      expect(await this.send('PUT', this.path(location, blob.digest), bytesOf(blob)), [201], 'PUT blob');
      return;
    }
    location = await this.patchFrom(location, blob, 0);
    expect(await this.send('PUT', this.path(location, blob.digest)), [201], 'PUT closing a chunked upload');
  }

  /** PATCHes the blob from `offset` in chunks; after a cut, asks the upload where it stands and goes on from there (twice at most) */
  private async patchFrom(location: string, blob: BlobRef, offset: number, resumes = 2): Promise<string> {
    const bytes = bytesOf(blob);
    while (offset < bytes.length) {
      const end = Math.min(bytes.length, offset + (this.random.next() < 0.5 ? this.random.int(1, 64 * 1024) : this.random.int(1 * MiB, 6 * MiB)));
      let reply: Reply;
      try {
        reply = expect(await this.send('PATCH', this.path(location), bytes.subarray(offset, end), { 'content-range': `${offset}-${end - 1}` }), [202], 'PATCH');
      } catch (err) {
        if (resumes === 0 || !(err instanceof CutError || err instanceof Refused)) throw err;
        const status = expect(await this.send('GET', this.path(location)), [204], 'upload status after a cut PATCH');
        const m = /^0-(\d+)$/.exec(status.headers.get('range') ?? '');
        if (!m) throw new UnexpectedReply(`upload status after a cut PATCH: Range ${status.headers.get('range')}`);
        const held = Number(m[1]) === 0 && offset === 0 ? 0 : Number(m[1]) + 1;
        return this.patchFrom(status.headers.get('location') ?? location, blob, held, resumes - 1);
      }
      location = reply.headers.get('location')!;
      offset = end;
    }
    return location;
  }

  private uploadMode(): 'monolithic' | 'post' | 'chunked' {
    const r = this.random.next();
    return r < 0.4 ? 'monolithic' : r < 0.6 ? 'post' : 'chunked';
  }

  // --- manifests ---------------------------------------------------------------------------

  private config(): BlobRef {
    const bytes = Buffer.from(JSON.stringify({ architecture: this.random.pick(['amd64', 'arm64']), os: 'linux', rootfs: { type: 'layers', diff_ids: [] }, soak: this.random.bigint().toString(16) }));
    return { digest: sha256(bytes), size: bytes.length, bytes };
  }

  /** uploads the layers (new, mounted or present) and the config of a new image; returns the manifest */
  private async buildImage(repo: string): Promise<{ body: Buffer; blobs: BlobRef[] }> {
    const layers: BlobRef[] = [];
    for (let i = this.random.int(1, 3); i > 0; i--) {
      const borrowed = this.random.next() < 0.25 ? this.borrowedLayer(repo) : undefined;
      if (borrowed && !layers.some((l) => l.digest === borrowed.blob.digest)) {
        await this.upload(repo, borrowed.blob, borrowed.from ? { from: borrowed.from } : 'exists');
        layers.push(borrowed.blob);
        continue;
      }
      const layer = this.newLayer();
      await this.upload(repo, layer, layer.size > MiB ? this.random.pick(['chunked', 'monolithic'] as const) : this.uploadMode());
      layers.push(layer);
    }
    const config = this.config();
    await this.upload(repo, config, 'monolithic');
    const body = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: config.digest, size: config.size },
        layers: layers.map((l) => ({ mediaType: LAYER, digest: l.digest, size: l.size })),
      }),
    );
    return { body, blobs: [config, ...layers] };
  }

  /** PUT of a manifest; on 201 the ledger records it */
  private async putManifest(repo: string, reference: string, fields: { body: Buffer; mediaType: string; blobs: BlobRef[]; children?: string[]; subject?: string; child?: boolean }): Promise<ManifestRecord> {
    const reply = expect(await this.send('PUT', `/v2/${repo}/manifests/${reference}`, fields.body, { 'content-type': fields.mediaType }), [201], `PUT manifest ${repo}:${reference}`);
    const digest = sha256(fields.body);
    if (reply.headers.get('docker-content-digest') !== digest) throw new UnexpectedReply(`PUT manifest: Docker-Content-Digest ${reply.headers.get('docker-content-digest')}, not ${digest}`);
    this.shared.acknowledged.count++;
    return this.shared.ledger.pushed(
      { repo, digest, mediaType: fields.mediaType, body: fields.body, blobs: fields.blobs, children: fields.children ?? [], subject: fields.subject, child: fields.child ?? false, owner: this.id },
      reply.start,
      reference.startsWith('sha256:') ? undefined : reference,
    );
  }

  private newTag(repo: string): string {
    const keep = repo.startsWith('ret/') && this.random.next() < 0.3;
    return `${keep ? 'keep-' : ''}c${this.id}-${++this.counter}`;
  }

  private async pushImage(): Promise<void> {
    const repo = this.random.pick(REPOSITORIES);
    const image = await this.buildImage(repo);
    const tag = this.newTag(repo);
    const rec = await this.putManifest(repo, tag, { ...image, mediaType: OCI_MANIFEST });
    this.tops.push({ repo, digest: rec.digest, tag });
    if (this.random.next() < 0.2) await this.pushReferrer(repo, rec);
    if (this.random.next() < 0.2) await this.shared.checker.check(rec); // read your writes
  }

  private async pushReferrer(repo: string, subject: ManifestRecord): Promise<void> {
    const bytes = Buffer.from(JSON.stringify({ signed: subject.digest, by: this.id, nonce: this.random.bigint().toString(16) }));
    const payload: BlobRef = { digest: sha256(bytes), size: bytes.length, bytes };
    await this.upload(repo, EMPTY, 'exists');
    await this.upload(repo, payload, 'monolithic');
    const body = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        artifactType: 'application/vnd.example.soak.signature+json',
        config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: EMPTY.digest, size: EMPTY.size },
        layers: [{ mediaType: 'application/vnd.example.soak.signature+json', digest: payload.digest, size: payload.size }],
        subject: { mediaType: subject.mediaType, digest: subject.digest, size: subject.body.length },
      }),
    );
    const rec = await this.putManifest(repo, sha256(body), { body, mediaType: OCI_MANIFEST, blobs: [EMPTY, payload], subject: subject.digest });
    this.referrers.push({ repo, digest: rec.digest });
  }

  private async pushIndex(): Promise<void> {
    const repo = this.random.pick(REPOSITORIES);
    const children: ManifestRecord[] = [];
    for (let i = 0; i < 2; i++) {
      const image = await this.buildImage(repo);
      children.push(await this.putManifest(repo, sha256(image.body), { ...image, mediaType: OCI_MANIFEST, child: true }));
    }
    const body = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_INDEX,
        manifests: children.map((c, i) => ({ mediaType: OCI_MANIFEST, digest: c.digest, size: c.body.length, platform: { architecture: ['amd64', 'arm64'][i], os: 'linux' } })),
      }),
    );
    const tag = this.newTag(repo);
    const index = await this.putManifest(repo, tag, { body, mediaType: OCI_INDEX, blobs: [], children: children.map((c) => c.digest) });
    this.tops.push({ repo, digest: index.digest, tag });
    await this.pushReferrer(repo, this.random.next() < 0.7 ? index : this.random.pick(children));
  }

  /** pushes one of its images or indexes again, as a client would: blobs found by HEAD (uploaded when gone), the manifest under its tag */
  private async rePush(): Promise<void> {
    if (this.tops.length === 0) return;
    const top = this.random.pick(this.tops);
    const rec = this.shared.ledger.get(top.repo, top.digest)!;
    for (const digest of rec.children) {
      const child = this.shared.ledger.get(top.repo, digest)!;
      for (const blob of child.blobs) await this.upload(top.repo, blob, 'exists');
      await this.putManifest(top.repo, digest, child);
    }
    for (const blob of rec.blobs) await this.upload(top.repo, blob, 'exists');
    await this.putManifest(top.repo, top.tag, rec);
  }

  /** one of its live manifests under a new tag */
  private async tagAgain(): Promise<void> {
    const live = this.tops.filter((t) => this.shared.ledger.get(t.repo, t.digest)?.live);
    if (live.length === 0) return;
    const top = this.random.pick(live);
    const tag = this.newTag(top.repo);
    await this.putManifest(top.repo, tag, this.shared.ledger.get(top.repo, top.digest)!);
    this.tops.push({ ...top, tag });
  }

  private async pull(): Promise<void> {
    const live = this.shared.ledger.live();
    if (live.length === 0) return;
    if ((await this.shared.checker.check(this.random.pick(live))) === 'inconclusive') throw new Inconclusive();
  }

  /** deletes one of its images, indexes (their children stay) or referrers */
  private async deleteManifest(): Promise<void> {
    const candidates = [...this.tops, ...this.referrers].filter((t) => this.shared.ledger.get(t.repo, t.digest)?.live);
    if (candidates.length === 0) return;
    const { repo, digest } = this.random.pick(candidates);
    const rec = this.shared.ledger.get(repo, digest)!;
    this.shared.ledger.deleting(rec);
    // 404: already gone, which only the retention policy may do (or a delete of ours that a kill cut and HAProxy retried)
    const reply = expect(await this.send('DELETE', `/v2/${repo}/manifests/${digest}`), [202, 404], 'DELETE manifest');
    if (reply.status === 404 && !underPolicy(repo)) this.shared.checker.deleteNotFound(rec, reply);
  }

  /** a blob pushed and deleted again: no manifest uses it */
  private async orphanBlob(): Promise<void> {
    const repo = this.random.pick(REPOSITORIES);
    const blob = this.newLayer();
    await this.upload(repo, blob, this.uploadMode());
    expect(await this.send('DELETE', `/v2/${repo}/blobs/${blob.digest}`), [202], 'DELETE blob');
  }

  /** an upload given some bytes (a part of the multipart upload beyond the 6 MiB chunk size) and left open, or cancelled */
  private async openUpload(): Promise<void> {
    const repo = this.random.pick(REPOSITORIES);
    const post = expect(await this.send('POST', `/v2/${repo}/blobs/uploads/`), [202], 'POST upload');
    const size = this.random.next() < 0.5 ? 7 * MiB : this.random.int(1, 100_000);
    const bytes = new PatternBlob(size, this.random.bigint()).bytes();
    const patch = expect(await this.send('PATCH', this.path(post.headers.get('location')!), bytes, { 'content-range': `0-${size - 1}` }), [202], 'PATCH');
    if (this.random.next() < 0.5) expect(await this.send('DELETE', this.path(patch.headers.get('location')!)), [204], 'DELETE upload');
  }
}
