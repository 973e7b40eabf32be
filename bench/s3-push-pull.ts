/**
 * Push and pull one large blob (default 1 GiB) through berth and through the reference registry
 * (Debian's docker-registry, Distribution 2.8, its s3 driver), both on the same throw-away Ceph
 * radosgw, and print times and each registry's peak RSS (VmHWM). A measurement, not a test:
 *
 *   node --import tsx bench/s3-push-pull.ts [MiB]
 *
 * For each registry: a monolithic push (POST, then PUT ?digest= with the body streamed), a pull
 * that follows the 307 to the pre-signed store URL (the default with S3), and a pull streamed
 * through a second instance on the same bucket with storage.redirect.disable.
 *
 * `npm run bench` has S3 rows of its own (s3-*, bench/lib/s3.ts) and measures the same three
 * operations there, with 128 MiB blobs so the whole run stays within 15 minutes. This script is
 * kept for what those rows do not show: the full 1 GiB blob on S3, and each registry's
 * idle RSS next to its peak (memory does not grow with the blob; bench/results/s3-1gib.md). It
 * runs berth from src/ through tsx, as the tests do, not compiled as the bench does.
 */
import { DeleteObjectsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { MiB, PatternBlob, readProcessMemory, resetPeakRss, startBerthProcess, streamDownload, streamRequest } from '../test/helpers/berth-process.js';
import { CEPH_ACCESS_KEY, CEPH_SECRET_KEY, startCeph } from '../test/helpers/ceph.js';
import { startReferenceRegistry } from '../test/helpers/reference-registry.js';

const size = Number(process.argv[2] ?? 1024) * MiB;

interface Server {
  url: string;
  pid: number;
  stop(): Promise<unknown>;
}

const mib = (bytes: number) => (bytes / MiB).toFixed(0);
const rate = (bytes: number, ms: number) => ((bytes / MiB) / (ms / 1000)).toFixed(0);

async function push(server: Server, name: string, blob: PatternBlob) {
  const post = await fetch(`${server.url}/v2/${name}/blobs/uploads/`, { method: 'POST' });
  if (post.status !== 202) throw new Error(`POST ${post.status}`);
  const url = new URL(post.headers.get('location')!, server.url);
  url.searchParams.set('digest', blob.digest());
  const res = await streamRequest(url, { method: 'PUT', headers: { 'content-length': blob.size, 'content-type': 'application/octet-stream' }, body: blob.chunks(), timeoutMs: 30 * 60_000 });
  if (res.status !== 201) throw new Error(`PUT ${res.status}: ${res.body}`);
  return res.ms;
}

async function pullRedirected(server: Server, name: string, blob: PatternBlob) {
  const started = Date.now();
  const res = await fetch(`${server.url}/v2/${name}/blobs/${blob.digest()}`, { redirect: 'manual' });
  await res.arrayBuffer();
  if (res.status !== 307) throw new Error(`GET answered ${res.status}, expected 307`);
  const got = await streamDownload(res.headers.get('location')!, 'GET', 30 * 60_000);
  if (got.digest !== blob.digest()) throw new Error('digest mismatch (redirected pull)');
  return Date.now() - started;
}

async function pullStreamed(server: Server, name: string, blob: PatternBlob) {
  const got = await streamDownload(`${server.url}/v2/${name}/blobs/${blob.digest()}`, 'GET', 30 * 60_000);
  if (got.status !== 200 || got.digest !== blob.digest()) throw new Error(`streamed pull: ${got.status}`);
  return got.ms;
}

async function wipe(client: S3Client, bucket: string) {
  for (;;) {
    const out = await client.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 1000 }));
    if (!out.Contents?.length) return;
    await client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: out.Contents.map((o) => ({ Key: o.Key! })) } }));
  }
}

async function main() {
  const ceph = await startCeph({ memstoreBytes: 8 * 1024 * MiB });
  const rows: string[] = [];
  try {
    const blob = new PatternBlob(size);
    const t0 = Date.now();
    blob.digest();
    console.error(`blob of ${mib(size)} MiB, digest in ${Date.now() - t0} ms`);
    const client = new S3Client({
      region: 'us-east-1', endpoint: ceph.endpoint, forcePathStyle: true,
      credentials: { accessKeyId: CEPH_ACCESS_KEY, secretAccessKey: CEPH_SECRET_KEY },
      requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED',
    });

    const registries: { label: string; start(redirect: boolean, bucket: string): Promise<Server> }[] = [
      {
        label: 'berth',
        start: async (redirect, bucket) =>
          startBerthProcess({ s3: ceph.params(bucket, { rootdirectory: '/bench' }), config: { storage: { redirect: { disable: !redirect } } } }),
      },
      {
        label: 'reference (docker-registry 2.8.2, s3)',
        start: async (redirect, bucket) => {
          const ref = await startReferenceRegistry({
            config: {
              log: { level: 'warn' },
              storage: {
                filesystem: undefined,
                s3: { ...ceph.params(bucket, { rootdirectory: '/bench' }), v4auth: true, chunksize: 10 * MiB },
                redirect: { disable: !redirect },
              },
            },
          });
          return { url: ref.url, pid: ref.pid, stop: () => ref.stop() };
        },
      },
    ];
    for (const registry of registries) {
      const bucket = await ceph.createBucket('bench');
      const main = await registry.start(true, bucket);
      const streaming = await registry.start(false, bucket);
      try {
        const idle = readProcessMemory(main.pid).rss;
        resetPeakRss(main.pid);
        resetPeakRss(streaming.pid);
        const pushMs = await push(main, 'bench/big', blob);
        const pushPeak = readProcessMemory(main.pid).hwm;
        const redirectedMs = await pullRedirected(main, 'bench/big', blob);
        const afterPull = readProcessMemory(main.pid).hwm;
        const streamedMs = await pullStreamed(streaming, 'bench/big', blob);
        const streamPeak = readProcessMemory(streaming.pid).hwm;
        rows.push(
          `| ${registry.label} | ${(pushMs / 1000).toFixed(1)} s (${rate(size, pushMs)} MiB/s) | ${mib(idle)} MiB | ${mib(pushPeak)} MiB | ` +
            `${(redirectedMs / 1000).toFixed(1)} s (${rate(size, redirectedMs)} MiB/s), peak ${mib(afterPull)} MiB | ` +
            `${(streamedMs / 1000).toFixed(1)} s (${rate(size, streamedMs)} MiB/s), peak ${mib(streamPeak)} MiB |`,
        );
        console.error(rows[rows.length - 1]);
      } finally {
        await main.stop();
        await streaming.stop();
      }
      await wipe(client, bucket);
    }
    client.destroy();
  } finally {
    await ceph.stop();
  }
  console.log(`\n${mib(size)} MiB blob on Ceph radosgw 16.2 (memstore OSD, loopback), ${new Date().toISOString()}\n`);
  console.log('| registry | push (monolithic PUT) | RSS idle | peak RSS after push | pull via 307 to the store (peak RSS) | pull streamed by the registry, redirect disabled (peak RSS) |');
  console.log('|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
