/**
 * What the online collection tests share: the delays per store (S3 keeps modification times to
 * the second), a berth with online collection for one test on a store whose clock the test moves
 * (`age`, test/helpers/aging-store.ts: no real sleep), and whether an image is served whole.
 */
import { createHash } from 'node:crypto';
import { startBerth, type Overrides, type TestRegistry } from '../helpers/berth.js';
import { AgingStore } from '../helpers/aging-store.js';
import type { Image } from '../helpers/images.js';

export type OnlineStore = 'filesystem' | 's3';

/** the collection delay of the tests, and how far to age the store for something to be older than it */
export function delays(driver: OnlineStore): { DELAY_MS: number; AGED_MS: number } {
  const DELAY_MS = driver === 's3' ? 2000 : 1000;
  return { DELAY_MS, AGED_MS: DELAY_MS + (driver === 's3' ? 1200 : 200) };
}

/**
 * runs `body` with a berth configured by `overrides` (collection delay DELAY_MS of `driver`),
 * stopped however the body ends. `age(ms)` makes what its store holds ms older (the store's clock,
 * which the collection reads), then lets the quiet time of the registry's use records pass for
 * real (delay / 4, src/features/gc.ts: within it a request does not record a use again, measured
 * on the process's clock, which the store's does not move)
 */
export function berthFor(overrides: Overrides, driver: OnlineStore) {
  const quietMs = delays(driver).DELAY_MS / 4;
  return async (body: (berth: TestRegistry & { age(ms: number): Promise<void> }) => Promise<void>): Promise<void> => {
    let store: AgingStore | undefined;
    const berth = await startBerth(overrides, { driver, wrapDriver: (inner) => (store = new AgingStore(inner)) });
    const age = async (ms: number) => {
      store!.age(ms);
      await new Promise((resolve) => setTimeout(resolve, quietMs + 10));
    };
    try {
      await body({ ...berth, age });
    } finally {
      await berth.stop();
    }
  };
}

/** the digest of `data` in the algorithm of `like` (sha256 or sha512 content) */
const sha = (data: Buffer, like: string) => {
  const algorithm = like.slice(0, like.indexOf(':'));
  return `${algorithm}:${createHash(algorithm).update(data).digest('hex')}`;
};

/** the image (and, recursively, its children) is served whole by digest; undefined, or what is wrong */
export async function servedWhole(url: string, name: string, image: Image): Promise<string | undefined> {
  const manifest = await fetch(`${url}/v2/${name}/manifests/${image.digest}`, { headers: { accept: image.mediaType } });
  if (manifest.status !== 200) return `${name}@${image.digest}: manifest ${manifest.status}`;
  if (sha(Buffer.from(await manifest.arrayBuffer()), image.digest) !== image.digest) return `${name}@${image.digest}: manifest bytes differ`;
  for (const blob of image.blobs) {
    const res = await fetch(`${url}/v2/${name}/blobs/${blob.digest}`);
    if (res.status !== 200) return `${name}: blob ${blob.digest} ${res.status}`;
    if (sha(Buffer.from(await res.arrayBuffer()), blob.digest) !== blob.digest) return `${name}: blob ${blob.digest} bytes differ`;
  }
  for (const child of image.children) {
    const problem = await servedWhole(url, name, child);
    if (problem) return `child of ${image.digest}: ${problem}`;
  }
  return undefined;
}
