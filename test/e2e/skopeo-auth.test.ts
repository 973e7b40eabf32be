/** A real client with credentials: skopeo pushes and pulls through htpasswd and through the built-in token issuer. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { writeOCILayout, type LayoutImage } from '../helpers/oci-layout.js';
import { assertTool, needTool } from '../helpers/tools.js';

const run = promisify(execFile);

const USERS = { alice: 'alice-pw', bob: 'bob-pw' };
const ACCESS = { 'team/*': { alice: ['pull', 'push', 'delete'], bob: ['pull'] } };

for (const mode of ['htpasswd', 'token issuer'] as const) {
  describe(`skopeo with credentials through ${mode}`, needTool('skopeo', 'the real-client auth test'), () => {
    let registry: TestRegistry;
    let work: string;
    let image: LayoutImage;
    let host: string;
    let skopeo: (...args: string[]) => Promise<{ stdout: string }>;

    before(async () => {
      assertTool('skopeo', 'the real-client auth test');
      work = await mkdtemp(join(tmpdir(), 'berth-skopeo-auth-'));
      const authfile = join(work, 'auth.json'); // never the user's own credentials
      skopeo = (...args) => run('skopeo', [args[0], '--authfile', authfile, ...args.slice(1)], { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
      await writeHtpasswd(join(work, 'htpasswd'), USERS);
      const htpasswd = { realm: 'berth-e2e', path: join(work, 'htpasswd') };
      if (mode === 'htpasswd') {
        registry = await startBerth({ auth: { htpasswd, access: ACCESS } });
      } else {
        const key = generateKeyPairSync('rsa', { modulusLength: 2048 });
        await writeFile(join(work, 'issuer.key'), key.privateKey.export({ type: 'pkcs8', format: 'pem' }));
        registry = await startBerth({
          auth: {
            htpasswd,
            token: { autoredirect: true, service: 'berth-e2e', issuer: { name: 'berth-e2e-issuer', enabled: true, signingkey: join(work, 'issuer.key') } },
            access: ACCESS,
          },
        });
      }
      host = new URL(registry.url).host;
      image = await writeOCILayout(join(work, 'layout'), { layerSizes: [1024, 200_000] });
    });
    after(async () => {
      await registry?.stop();
      if (work) await rm(work, { recursive: true, force: true });
    });

    it('pushes with --dest-creds, inspects and pulls the same bytes with a pull-only user', async () => {
      await skopeo('copy', '--dest-tls-verify=false', '--dest-creds', 'alice:alice-pw', `oci:${image.dir}:${image.tag}`, `docker://${host}/team/app:1.0`);
      const inspected = JSON.parse((await skopeo('inspect', '--tls-verify=false', '--creds', 'bob:bob-pw', `docker://${host}/team/app:1.0`)).stdout);
      assert.equal(inspected.Digest, image.manifestDigest);
      const out = join(work, 'pulled');
      await skopeo('copy', '--src-tls-verify=false', '--src-creds', 'bob:bob-pw', `docker://${host}/team/app:1.0`, `dir:${out}`);
      for (const digest of image.blobDigests) {
        const pulled = await readFile(join(out, digest.slice(7)));
        assert.ok(pulled.equals(await readFile(join(image.dir, 'blobs/sha256', digest.slice(7)))), digest);
      }
    });

    it('refuses a push by a pull-only user, wrong credentials and no credentials', async () => {
      await assert.rejects(skopeo('copy', '--dest-tls-verify=false', '--dest-creds', 'bob:bob-pw', `oci:${image.dir}:${image.tag}`, `docker://${host}/team/other:1.0`), /denied|unauthorized|authentication required|insufficient/i);
      await assert.rejects(skopeo('inspect', '--tls-verify=false', '--creds', 'bob:wrong', `docker://${host}/team/app:1.0`), /unauthorized|authentication|invalid username/i);
      await assert.rejects(skopeo('inspect', '--tls-verify=false', '--no-creds', `docker://${host}/team/app:1.0`), /unauthorized|authentication required/i);
    });
  });
}
