/**
 * The hosts an upstream may send the cache to: the token realm of its Bearer challenge (which gets
 * the upstream's credentials) and the targets of its blob redirects (a CDN). Allowed are:
 *
 * - the upstream's own host (host and port);
 * - on the default port, a host of the upstream's registrable domain, judged simply: the upstream
 *   host's last two labels (registry-1.docker.io and auth.docker.io share docker.io). Under a
 *   public suffix of more labels (co.uk, azurecr.io...) this is too wide: `evil.co.uk` would pass
 *   for `registry.example.co.uk`, so those upstreams should be named by host with their own
 *   realm's host configured. An IP address or a one-label name has no such domain;
 * - the hosts the configuration names (`realmhosts`, `redirecthosts`, and the known CDNs of
 *   Docker Hub and ghcr.io for redirects): `host` (any port), `host:port`, `*.domain`.
 *
 * Never a downgrade: from an https upstream only https targets.
 */

export class AllowedHosts {
  private readonly site?: string;

  constructor(
    private readonly upstream: URL,
    private readonly named: readonly string[],
  ) {
    this.site = registrableDomain(upstream.hostname);
  }

  allows(target: URL): boolean {
    if (target.protocol !== 'https:' && !(target.protocol === 'http:' && this.upstream.protocol === 'http:')) return false;
    if (target.host === this.upstream.host) return true;
    const hostname = target.hostname.toLowerCase();
    if (this.site && target.port === '' && (hostname === this.site || hostname.endsWith(`.${this.site}`))) return true;
    return this.named.some((entry) => matches(entry.toLowerCase(), target, hostname));
  }
}

/** the known CDN hosts a registry redirects its blob downloads to */
export function knownRedirectHosts(remoteurl: string): string[] {
  const host = new URL(remoteurl).hostname;
  if (['docker.io', 'index.docker.io', 'registry-1.docker.io'].includes(host)) return ['*.docker.com', '*.r2.cloudflarestorage.com'];
  if (host === 'ghcr.io') return ['pkg-containers.githubusercontent.com'];
  return [];
}

function matches(entry: string, target: URL, hostname: string): boolean {
  if (entry.startsWith('*.')) return hostname.endsWith(entry.slice(1));
  if (/^(\[[^\]]*\]|[^:]*):\d+$/.test(entry)) return target.host.toLowerCase() === entry;
  return hostname === entry;
}

/** the last two labels of a DNS name; undefined for an IP address or a one-label name */
function registrableDomain(hostname: string): string | undefined {
  if (hostname.startsWith('[') || /^\d+(\.\d+){3}$/.test(hostname)) return undefined;
  const labels = hostname.toLowerCase().split('.');
  return labels.length >= 2 ? labels.slice(-2).join('.') : undefined;
}
