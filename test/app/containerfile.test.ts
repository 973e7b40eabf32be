/**
 * The Containerfile, linted (dockerfile-utils, the checker behind editors' Dockerfile support) and
 * held to what the image promises: a drop-in for Distribution's registry:2 (port 5000, its config
 * path, the /var/lib/registry volume), a non-root user, a health check, and a configuration that
 * berth accepts. Building it needs the network (base image, npm), so CI does not build it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { validate } from 'dockerfile-utils';
import { parse } from 'yaml';

const run = promisify(execFile);
const text = readFileSync(new URL('../../Containerfile', import.meta.url), 'utf8');
/** the final stage's instructions, continuation lines joined */
const finalStage = text
  .replace(/\\\n/g, ' ')
  .split('\n')
  .filter((line) => line.trim() && !line.trimStart().startsWith('#'))
  .join('\n')
  .split(/^FROM /m)
  .pop()!;

describe('Containerfile', () => {
  it('lints clean', () => {
    const problems = validate(text).map((d) => `line ${d.range.start.line + 1}: ${d.message}`);
    assert.deepEqual(problems, []);
  });

  it('is a drop-in for registry:2 and registry:3: port 5000, /etc/docker/registry/config.yml, the /var/lib/registry volume', () => {
    assert.match(finalStage, /^EXPOSE 5000$/m);
    assert.match(finalStage, /^VOLUME \["\/var\/lib\/registry"\]$/m);
    assert.match(finalStage, /^COPY contrib\/container\/config\.yml \/etc\/docker\/registry\/config\.yml$/m);
    // Distribution's entrypoint rules and the two configuration places: test/app/container-entrypoint.test.ts
    assert.match(finalStage, /^COPY contrib\/container\/entrypoint\.sh contrib\/container\/healthcheck\.mjs \/usr\/local\/lib\/berth\/$/m);
    assert.match(finalStage, /^ENTRYPOINT \["\/usr\/local\/lib\/berth\/entrypoint\.sh"\]$/m);
    assert.match(finalStage, /^CMD \["serve"\]$/m);
    assert.match(finalStage, /ln -s "\$\(command -v berth\)" \/usr\/local\/bin\/registry/);
  });

  it('runs as a user that is not root, with a health check that follows the configuration', () => {
    assert.match(finalStage, /^USER node$/m);
    assert.match(finalStage, /^HEALTHCHECK .*CMD \["\/usr\/local\/lib\/berth\/entrypoint\.sh", "healthcheck"\]$/m);
  });

  it("carries a configuration berth accepts, with its data in the image's volume", async () => {
    const config = parse(readFileSync(new URL('../../contrib/container/config.yml', import.meta.url), 'utf8')) as { storage: { filesystem: { rootdirectory: string } }; http: { addr: string } };
    assert.equal(config.storage.filesystem.rootdirectory, '/var/lib/registry');
    assert.equal(config.http.addr, ':5000');
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'config', 'check', 'contrib/container/config.yml'], { timeout: 30_000 });
    assert.equal(JSON.parse(stdout).storage.filesystem.rootdirectory, '/var/lib/registry');
  });
});
