/**
 * A real client with a federated JWT: skopeo pushes and pulls with `--creds ci:$JWT`, through
 * htpasswd and through the built-in token issuer, and shows the refusal's reason.
 */
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
import { JwtIssuer } from '../helpers/jwt-issuer.js';
import { writeOCILayout, type LayoutImage } from '../helpers/oci-layout.js';
import { assertTool, needTool } from '../helpers/tools.js';

const run = promisify(execFile);
const MAIN = { repository: 'acme/app', ref: 'refs/heads/main' };

for (const mode of ['htpasswd', 'token issuer'] as const) {
  describe(`skopeo with a federated JWT through ${mode}`, needTool('skopeo', 'the federated real-client test'), () => {
    let registry: TestRegistry;
    let issuer: JwtIssuer;
    let work: string;
    let image: LayoutImage;
    let host: string;
    let skopeo: (...args: string[]) => Promise<{ stdout: string }>;
    const sign = (claims = MAIN) => issuer.sign({ sub: `repo:${claims.repository}:ref:${claims.ref}`, iat: Math.floor(Date.now() / 1000), claims });

    before(async () => {
      assertTool('skopeo', 'the federated real-client test');
      work = await mkdtemp(join(tmpdir(), 'berth-skopeo-federation-'));
      issuer = await JwtIssuer.start();
      const authfile = join(work, 'auth.json'); // never the user's own credentials
      skopeo = (...args) => run('skopeo', [args[0], '--authfile', authfile, ...args.slice(1)], { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
      await writeHtpasswd(join(work, 'htpasswd'), {});
      const federation = [
        { name: 'ci', issuer: issuer.iss, jwksuri: issuer.jwksUrl, audience: 'berth', rules: [{ claims: { repository: 'acme/*', ref: 'refs/heads/main' }, repositories: ['{{repository}}'], actions: ['pull', 'push'] }] },
      ];
      const htpasswd = { realm: 'berth-e2e', path: join(work, 'htpasswd') };
      if (mode === 'htpasswd') {
        registry = await startBerth({ auth: { htpasswd, federation, failedlogins: { burst: 0 } } });
      } else {
        const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
        await writeFile(join(work, 'issuer.key'), key.privateKey.export({ type: 'pkcs8', format: 'pem' }));
        registry = await startBerth({
          auth: { htpasswd, federation, failedlogins: { burst: 0 }, token: { autoredirect: true, service: 'berth-e2e', issuer: { name: 'berth-e2e-issuer', enabled: true, signingkey: join(work, 'issuer.key') } } },
        });
      }
      host = new URL(registry.url).host;
      image = await writeOCILayout(join(work, 'layout'), { layerSizes: [1024, 100_000] });
    });
    after(async () => {
      try {
        await registry?.stop();
      } finally {
        await issuer?.stop();
        if (work) await rm(work, { recursive: true, force: true });
      }
    });

    it('pushes with --dest-creds ci:$JWT and pulls the same bytes back', async () => {
      const jwt = await sign();
      await skopeo('copy', '--dest-tls-verify=false', '--dest-creds', `ci:${jwt}`, `oci:${image.dir}:${image.tag}`, `docker://${host}/acme/app:1.0`);
      const inspected = JSON.parse((await skopeo('inspect', '--tls-verify=false', '--creds', `ci:${jwt}`, `docker://${host}/acme/app:1.0`)).stdout);
      assert.equal(inspected.Digest, image.manifestDigest);
      const out = join(work, 'pulled');
      await skopeo('copy', '--src-tls-verify=false', '--src-creds', `ci:${jwt}`, `docker://${host}/acme/app:1.0`, `dir:${out}`);
      for (const digest of image.blobDigests) {
        const pulled = await readFile(join(out, digest.slice(7)));
        assert.ok(pulled.equals(await readFile(join(image.dir, 'blobs/sha256', digest.slice(7)))), digest);
      }
    });

    it('is refused for a branch no rule names, and the reason reaches the client', async () => {
      const jwt = await sign({ repository: 'acme/app', ref: 'refs/heads/dev' });
      // with htpasswd skopeo's first authenticated request is a HEAD, whose 401 has no body to carry the reason
      await assert.rejects(
        skopeo('copy', '--dest-tls-verify=false', '--dest-creds', `ci:${jwt}`, `oci:${image.dir}:${image.tag}`, `docker://${host}/acme/app:dev`),
        mode === 'htpasswd' ? /unauthorized/ : /no rule of issuer .*ci.* matches the token's claims/,
      );
      await assert.rejects(
        skopeo('inspect', '--tls-verify=false', '--creds', `ci:${jwt}`, `docker://${host}/acme/app:1.0`),
        /no rule of issuer .*ci.* matches the token's claims: repository=.*acme\/app.*, ref=.*refs\/heads\/dev/,
      );
    });
  });
}
