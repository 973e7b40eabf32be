/** Which hosts an upstream may send the cache to (src/proxy/hosts.ts): its own, its domain's, the configured ones. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AllowedHosts, knownRedirectHosts } from '../../src/proxy/hosts.js';

const allows = (upstream: string, target: string, named: string[] = []) => new AllowedHosts(new URL(upstream), named).allows(new URL(target));

describe('allowed hosts of an upstream', () => {
  it("allows the upstream's own host and its registrable domain (last two labels) on the default port", () => {
    assert.ok(allows('https://registry-1.docker.io', 'https://auth.docker.io/token'));
    assert.ok(allows('https://ghcr.io', 'https://ghcr.io/token'));
    assert.ok(allows('https://quay.io', 'https://cdn01.quay.io/blob'));
    assert.ok(allows('http://127.0.0.1:5000', 'http://127.0.0.1:5000/token'));
    assert.ok(!allows('https://registry-1.docker.io', 'https://auth.docker.io:8443/token'), 'another port of the domain');
    assert.ok(!allows('https://registry-1.docker.io', 'https://docker.io.evil.example/token'));
    assert.ok(!allows('https://registry-1.docker.io', 'https://evildocker.io/token'));
  });

  it('refuses other hosts, other ports of an IP address, and a downgrade to http', () => {
    assert.ok(!allows('http://127.0.0.1:5000', 'http://127.0.0.1:5001/debug/vars'));
    assert.ok(!allows('http://127.0.0.1:5000', 'http://127.0.0.2:5000/token'));
    assert.ok(!allows('http://localhost:5000', 'http://evil.localhost/token'));
    assert.ok(!allows('https://registry-1.docker.io', 'http://auth.docker.io/token'));
  });

  it('allows the named hosts: host on any port, host:port, *.domain', () => {
    assert.ok(allows('http://127.0.0.1:5000', 'http://127.0.0.2:9999/token', ['127.0.0.2']));
    assert.ok(allows('http://127.0.0.1:5000', 'http://127.0.0.1:6000/cdn', ['127.0.0.1:6000']));
    assert.ok(!allows('http://127.0.0.1:5000', 'http://127.0.0.1:6001/cdn', ['127.0.0.1:6000']));
    assert.ok(allows('https://registry.example.com', 'https://a.cdn.example.net/x', ['*.cdn.example.net']));
    assert.ok(!allows('https://registry.example.com', 'https://cdn.example.net.evil/x', ['*.cdn.example.net']));
  });

  it("knows Docker Hub's and ghcr.io's CDNs", () => {
    const hub = knownRedirectHosts('https://registry-1.docker.io');
    assert.ok(allows('https://registry-1.docker.io', 'https://production.cloudflare.docker.com/registry-v2/x', hub));
    assert.ok(allows('https://registry-1.docker.io', 'https://docker-images-prod.6aa30f8b08e16409b46e0173d6de2f56.r2.cloudflarestorage.com/x', hub));
    assert.ok(allows('https://ghcr.io', 'https://pkg-containers.githubusercontent.com/ghcr1/blobs/x', knownRedirectHosts('https://ghcr.io')));
    assert.deepEqual(knownRedirectHosts('https://registry.example.com'), []);
  });
});
