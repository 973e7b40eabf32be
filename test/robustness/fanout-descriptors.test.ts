/**
 * "One pushed document must not take every file descriptor" (issue 18): berth runs as a child
 * process whose descriptor limit is lowered to 1,024 (prlimit on its pid), as an attacker would
 * find a small container. An index listing one child 37,000 times, an index of 9,000 distinct
 * unknown children and a referrers listing of 1,200 entries each fanned out one open per
 * reference at once: EMFILE, 500, and other clients timed out. Each now answers its spec status,
 * and an ordinary client pulling an image alongside is answered 200 every time.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { startBerthProcess, type BerthProcess } from '../helpers/berth-process.js';
import { pushBlob, sha256 } from '../helpers/blobs.js';
import { buildImage, ManifestTypes, pushImageOK, putManifest, type Image } from '../helpers/images.js';
import { needTool } from '../helpers/tools.js';

const NOFILE = 1024;
const REPO = 'fanout/app';
const EMPTY = Buffer.from('{}');
const EMPTY_DESCRIPTOR = { mediaType: 'application/vnd.oci.empty.v1+json', digest: sha256(EMPTY), size: 2 };

/** an OCI index whose children are `digests`, with one-letter media types so 37,000 fit in 4 MiB */
function indexOf(digests: string[]): Buffer<ArrayBuffer> {
  return Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: ManifestTypes.ociIndex, manifests: digests.map((digest) => ({ mediaType: 'x', digest, size: 1 })) }));
}

const randomDigest = () => `sha256:${randomBytes(32).toString('hex')}`;

/**
 * Pulls `image` (manifest and first blob) over and over until `attack` settles; every answer must
 * be 200. Returns the attack's result and how many pulls were answered meanwhile.
 */
async function servedDuring<T>(url: string, image: Image, attack: Promise<T>): Promise<{ result: T; pulls: number; failures: string[] }> {
  let done = false;
  const finished = attack.finally(() => {
    done = true;
  });
  let pulls = 0;
  const failures: string[] = [];
  const client = async () => {
    do {
      for (const path of [`/v2/${REPO}/manifests/${image.digest}`, `/v2/${REPO}/blobs/${image.blobs[0].digest}`]) {
        const res = await fetch(`${url}${path}`, { headers: { accept: image.mediaType }, signal: AbortSignal.timeout(30_000) });
        await res.arrayBuffer();
        if (res.status !== 200) failures.push(`${path}: ${res.status}`);
      }
      pulls++;
    } while (!done);
  };
  const [result] = await Promise.all([finished, client()]);
  return { result, pulls, failures };
}

describe('fan-out over storage is bounded (child process, 1,024 descriptors)', { skip: needTool('prlimit', 'lowers the descriptor limit of the berth child process').skip }, () => {
  let berth: BerthProcess;
  let image: Image;

  before(async () => {
    berth = await startBerthProcess();
    execFileSync('prlimit', ['--pid', String(berth.pid), `--nofile=${NOFILE}:${NOFILE}`]);
    assert.match(readFileSync(`/proc/${berth.pid}/limits`, 'utf8'), new RegExp(`Max open files\\s+${NOFILE}\\s+${NOFILE}`));
    image = await pushImageOK(berth.url, REPO, buildImage('oci-manifest'));
  });
  after(async () => {
    await berth?.stop();
  });

  it('refuses an index listing one child 37,000 times (MANIFEST_INVALID, the limit named) while others pull', { timeout: 120_000 }, async () => {
    const body = indexOf(Array.from({ length: 37_000 }, () => image.digest));
    assert.ok(body.length <= 4 * 1024 * 1024, `the index fits the manifest size limit (${body.length} bytes)`);
    const attack = Promise.all(
      Array.from({ length: 4 }, async () => {
        const res = await putManifest(berth.url, REPO, 'many', body, ManifestTypes.ociIndex);
        return { status: res.status, body: (await res.json()) as { errors: { code: string; message: string; detail: Record<string, unknown> }[] } };
      }),
    );
    const { result, pulls, failures } = await servedDuring(berth.url, image, attack);
    for (const answer of result) {
      assert.equal(answer.status, 400);
      assert.equal(answer.body.errors.length, 1);
      const [error] = answer.body.errors;
      assert.equal(error.code, 'MANIFEST_INVALID');
      assert.equal(error.detail.check, 'references');
      assert.equal(error.detail.references, 37_000);
      assert.match(error.message, /37000 descriptors .* the limit is 10000/);
    }
    assert.deepEqual(failures, []);
    assert.ok(pulls > 0);
    assert.equal((await fetch(`${berth.url}/v2/${REPO}/manifests/many`)).status, 404, 'nothing was tagged');
  });

  it('accepts an index listing one child 9,000 times: the child is checked once', { timeout: 60_000 }, async () => {
    const body = indexOf(Array.from({ length: 9_000 }, () => image.digest));
    const res = await putManifest(berth.url, REPO, 'repeated', body, ManifestTypes.ociIndex);
    assert.equal(res.status, 201, await res.text());
    const got = await fetch(`${berth.url}/v2/${REPO}/manifests/repeated`, { headers: { accept: ManifestTypes.ociIndex } });
    assert.equal(got.status, 200);
    assert.ok(Buffer.from(await got.arrayBuffer()).equals(body));
  });

  it('answers 9,000 distinct unknown children with one MANIFEST_UNKNOWN each (no EMFILE) while others pull', { timeout: 120_000 }, async () => {
    const children = Array.from({ length: 9_000 }, randomDigest);
    const body = indexOf(children);
    const attack = Promise.all(
      Array.from({ length: 3 }, async () => {
        const res = await putManifest(berth.url, REPO, 'unknown', body, ManifestTypes.ociIndex);
        return { status: res.status, body: (await res.json()) as { errors: { code: string; detail: { digest: string } }[] } };
      }),
    );
    const { result, pulls, failures } = await servedDuring(berth.url, image, attack);
    for (const answer of result) {
      assert.equal(answer.status, 400);
      assert.ok(answer.body.errors.every((e) => e.code === 'MANIFEST_UNKNOWN'));
      assert.deepEqual(answer.body.errors.map((e) => e.detail.digest).sort(), [...children].sort());
    }
    assert.deepEqual(failures, []);
    assert.ok(pulls > 0);
  });

  it('lists 1,200 referrers (200, all of them) while others pull', { timeout: 180_000 }, async () => {
    assert.equal((await pushBlob(berth.url, REPO, EMPTY)).status, 201);
    const pushed = new Set<string>();
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < 1_200) {
          const n = next++;
          const manifest = Buffer.from(
            JSON.stringify({
              schemaVersion: 2,
              mediaType: ManifestTypes.ociManifest,
              artifactType: 'application/vnd.example.note.v1+json',
              config: EMPTY_DESCRIPTOR,
              layers: [EMPTY_DESCRIPTOR],
              subject: image.descriptor,
              annotations: { n: String(n) },
            }),
          );
          const res = await putManifest(berth.url, REPO, sha256(manifest), manifest, ManifestTypes.ociManifest);
          assert.equal(res.status, 201, await res.text());
          pushed.add(sha256(manifest));
        }
      }),
    );
    const attack = Promise.all(
      Array.from({ length: 4 }, async () => {
        const res = await fetch(`${berth.url}/v2/${REPO}/referrers/${image.digest}`);
        return { status: res.status, body: (await res.json()) as { manifests: { digest: string }[] } };
      }),
    );
    const { result, pulls, failures } = await servedDuring(berth.url, image, attack);
    for (const answer of result) {
      assert.equal(answer.status, 200);
      assert.deepEqual(new Set(answer.body.manifests.map((m) => m.digest)), pushed);
    }
    assert.deepEqual(failures, []);
    assert.ok(pulls > 0);
    assert.doesNotMatch(berth.logs(), /EMFILE/);
  });
});
