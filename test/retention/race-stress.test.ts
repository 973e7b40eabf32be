/**
 * The race of issue 26 (item 1), as reported: retention every 100 ms on `ret/**` (keep the newest
 * tag, delete tags and untagged manifests older than 300 ms) while four clients each re-push their
 * own six tags (a tag always gets the same manifest) and GET the tag and its digest right after
 * each 201. Run on berth with two HTTP workers (filesystem) and on two berth instances sharing one
 * Ceph bucket (a PUT through one, the GET through the other). Not one acknowledged push may be
 * missing at that GET; and retention must have been at work (old tags went). A few seconds each;
 * the interleavings themselves are made deterministic in race.test.ts.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { startBerthProcess, type BerthProcess } from '../helpers/berth-process.js';
import { CEPH_TOOLS, sharedCeph, stopSharedCeph } from '../helpers/ceph.js';
import { buildImage, pushContent, putManifest, type Image } from '../helpers/images.js';
import { needTools } from '../helpers/tools.js';

/** BERTH_RACE_MS lengthens the run for measuring (the figures in docs/security.md) */
const RUN_MS = Number(process.env.BERTH_RACE_MS ?? 3000);
const CLIENTS = 4;
const TAGS = 6;
const RETENTION = {
  storage: {
    maintenance: {
      retention: { enabled: true, interval: '100ms', policies: [{ repositories: ['ret/**'], keep: { newest: 1 }, delete: { tagsolderthan: '300ms', untaggedolderthan: '300ms' } }] },
      uploadpurging: { enabled: false },
    },
  },
};

interface Outcome {
  acknowledged: number;
  lost: string[];
  /** tags found deleted by retention just before their re-push (GET 404 before the PUT) */
  deletedSeen: number;
}

/** four clients re-push their tags for RUN_MS; `put` and `get` pick the instance of each request */
async function hammer(put: (client: number) => string, get: (client: number) => string): Promise<Outcome> {
  const images: Image[][] = [];
  for (let c = 0; c < CLIENTS; c++) {
    images.push([]);
    for (let t = 0; t < TAGS; t++) {
      const image = buildImage('docker-v2', { layers: 1, layerSize: 64 });
      await pushContent(put(c), `ret/c${c}`, image);
      images[c].push(image);
    }
  }
  const outcome: Outcome = { acknowledged: 0, lost: [], deletedSeen: 0 };
  const deadline = Date.now() + RUN_MS;
  await Promise.all(
    images.map(async (own, c) => {
      const name = `ret/c${c}`;
      for (let round = 0; Date.now() < deadline; round++) {
        const tag = `t${round % TAGS}`;
        const image = own[round % TAGS];
        if ((await fetch(`${get(c)}/v2/${name}/manifests/${tag}`, { method: 'HEAD', headers: { accept: image.mediaType } })).status === 404) outcome.deletedSeen++;
        const res = await putManifest(put(c), name, tag, image.body, image.mediaType);
        await res.arrayBuffer();
        if (res.status !== 201) continue; // not acknowledged: nothing was promised (none is expected)
        outcome.acknowledged++;
        const [byTag, byDigest] = await Promise.all(
          [tag, image.digest].map(async (reference) => {
            const got = await fetch(`${get(c)}/v2/${name}/manifests/${reference}`, { headers: { accept: image.mediaType } });
            await got.arrayBuffer();
            return got.status;
          }),
        );
        if (byTag !== 200 || byDigest !== 200) outcome.lost.push(`${name}:${tag} (by tag ${byTag}, by digest ${byDigest})`);
      }
    }),
  );
  return outcome;
}

function check(what: string, outcome: Outcome): void {
  console.log(`# retention race (${what}): ${outcome.lost.length} of ${outcome.acknowledged} acknowledged pushes missing at the GET after the 201; ${outcome.deletedSeen} tags found deleted by retention before their re-push`);
  assert.ok(outcome.acknowledged >= CLIENTS, 'the clients pushed');
  assert.ok(outcome.deletedSeen > 0, 'retention deleted tags meanwhile');
  assert.deepEqual(outcome.lost, []);
}

describe('retention racing re-pushes (issue 26)', () => {
  const started: BerthProcess[] = [];
  after(async () => {
    await Promise.all(started.map((p) => p.stop()));
    await stopSharedCeph();
  });

  it('two HTTP workers on the filesystem: every acknowledged push is there at the GET after its 201', { timeout: 120_000 }, async () => {
    const berth = await startBerthProcess({ config: { ...RETENTION, http: { workers: 2 } } });
    started.push(berth);
    check('2 workers, filesystem', await hammer(() => berth.url, () => berth.url));
  });

  it('two instances on one Ceph bucket: every acknowledged push is there at the GET on the other instance', { timeout: 180_000, ...needTools(CEPH_TOOLS, 'the two-instance S3 race') }, async () => {
    const { ceph, bucket } = await sharedCeph();
    const s3 = ceph.params(bucket, { rootdirectory: `/race-${Date.now()}` });
    const [a, b] = await Promise.all([startBerthProcess({ s3, config: RETENTION }), startBerthProcess({ s3, config: RETENTION })]);
    started.push(a, b);
    const instances = [a.url, b.url];
    check('2 instances, S3', await hammer((c) => instances[c % 2], (c) => instances[(c + 1) % 2]));
  });
});
