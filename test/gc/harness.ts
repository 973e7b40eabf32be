/**
 * What the garbage-collection tests share: a berth to push through, a way to run a collection
 * on its storage (the real command in a child process, or the core in this process for the
 * in-memory driver), what is stored, and images that share a layer.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { isDigest } from '../../src/registry/digest.js';
import * as layout from '../../src/registry/layout.js';
import { collectGarbage, summaryLine } from '../../src/registry/gc/index.js';
import { parseCollectArgs } from '../../src/cli/garbage-collect-args.js';
import { unlessMissing } from '../../src/storage/driver.js';
import { sha256 } from '../helpers/blobs.js';
import { REPO_ROOT } from '../helpers/berth-process.js';
import { startBerth, type Overrides, type TestRegistry } from '../helpers/berth.js';
import type { Image, ImageBlob } from '../helpers/images.js';
import { cleanEnv } from '../helpers/processes.js';

export type StoreKind = 'inmemory' | 'filesystem' | 's3';

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Store {
  berth: TestRegistry;
  /** runs a collection with these arguments (the configuration is added); `readOnly` defaults to true */
  collect(args: string[], options?: { readOnly?: boolean }): Promise<CommandResult>;
  /** the stored size of a blob (or manifest) by digest, undefined when it is not stored */
  stored(digest: string): Promise<number | undefined>;
  /** whether a storage path exists (a link, a side file) */
  exists(path: string): Promise<boolean>;
  stop(): Promise<void>;
}

/**
 * a berth on fresh storage, or on a given filesystem root or S3 parameters (a root shared with
 * Distribution); `metadata`: its metadata index, which the collection command tells too
 */
export async function startStore(kind: StoreKind, options: { root?: string; s3?: Overrides; metadata?: Overrides } = {}): Promise<Store> {
  const { metadata, ...where } = options;
  const berth = await startBerth(metadata ? { metadata } : {}, { driver: kind, ...where });
  const driver = berth.app.driver;
  const configDir = await mkdtemp(join(tmpdir(), 'berth-gc-conf-'));
  const storage = kind === 'filesystem' ? { filesystem: { rootdirectory: berth.root } } : { s3: berth.s3 };
  return {
    berth,
    async collect(args, options = {}) {
      if (kind === 'inmemory') return collectInProcess(berth, args);
      const file = join(configDir, 'config.yml');
      await writeFile(file, stringify({ version: '0.1', log: { level: 'error' }, storage: { ...storage, maintenance: { readonly: { enabled: options.readOnly ?? true } } }, ...(metadata && { metadata }) }));
      return runCommand(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli.ts'), 'garbage-collect', ...args, file]);
    },
    async stored(digest) {
      assert.ok(isDigest(digest));
      return (await unlessMissing(driver.stat(layout.blobData(digest))))?.size;
    },
    async exists(path) {
      return (await unlessMissing(driver.stat(path))) !== undefined;
    },
    async stop() {
      await berth.stop();
      await rm(configDir, { recursive: true, force: true });
    },
  };
}

/** the core on the running registry's own driver, with the command's output */
async function collectInProcess(berth: TestRegistry, argv: string[]): Promise<CommandResult> {
  const args = parseCollectArgs(argv);
  assert.ok(typeof args !== 'string', args as string);
  const lines: string[] = [];
  const summary = await collectGarbage(berth.app.driver, { ...args, report: args.quiet ? undefined : (line) => lines.push(line) });
  lines.push(summaryLine(summary, args.dryRun));
  return { code: 0, stdout: lines.join('\n') + '\n', stderr: '' };
}

export function runCommand(command: string, args: string[], env = cleanEnv({ dropPrefixes: ['REGISTRY_'] })): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** the summary line's figures: "would delete|deleted M manifests, B blobs (N bytes)" */
export function summaryOf(result: CommandResult): { manifests: number; blobs: number; bytes: number } {
  const line = result.stdout.trim().split('\n').at(-1) ?? '';
  const match = /(?:would delete|deleted) (\d+) manifests, (\d+) blobs \((\d+) bytes\)/.exec(line);
  assert.ok(match, `no summary line in:\n${result.stdout}\n${result.stderr}`);
  return { manifests: Number(match[1]), blobs: Number(match[2]), bytes: Number(match[3]) };
}

/** `image` with its first layer replaced by `layer` (a layer two images share); a new manifest digest */
export function sharingLayer(image: Image, layer: ImageBlob): Image {
  const doc = JSON.parse(image.body.toString()) as { layers: unknown[] };
  doc.layers[0] = { mediaType: layer.mediaType, digest: layer.digest, size: layer.size };
  const body = Buffer.from(JSON.stringify(doc, null, 3));
  const digest = sha256(body);
  return { ...image, body, digest, descriptor: { ...image.descriptor, digest, size: body.length }, blobs: [image.blobs[0], layer, ...image.blobs.slice(2)] };
}

/** GET of the manifest (by `reference`) and of every blob it and its children reference answer their exact bytes */
export async function assertServed(base: string, name: string, image: Image, reference: string = image.digest): Promise<void> {
  const res = await fetch(`${base}/v2/${name}/manifests/${reference}`, { headers: { accept: image.mediaType } });
  assert.equal(res.status, 200, `${name}@${reference}: ${res.status}`);
  assert.ok(Buffer.from(await res.arrayBuffer()).equals(image.body), `${name}@${reference}: manifest bytes`);
  for (const blob of image.blobs) {
    const got = await fetch(`${base}/v2/${name}/blobs/${blob.digest}`);
    assert.equal(got.status, 200, `${name} blob ${blob.digest}: ${got.status}`);
    assert.ok(Buffer.from(await got.arrayBuffer()).equals(blob.data), `${name} blob ${blob.digest}: bytes`);
  }
  for (const child of image.children) await assertServed(base, name, child);
}

export async function manifestStatus(base: string, name: string, reference: string): Promise<number> {
  const res = await fetch(`${base}/v2/${name}/manifests/${reference}`, { method: 'HEAD' });
  return res.status;
}
