/**
 * Several upstreams under repository prefixes (proxy.upstreams): which mirror a repository
 * belongs to, its name upstream, and containerd's `ns` parameter. Repositories outside every
 * prefix are the registry's own.
 */

export interface MirrorPrefix {
  prefix: string;
  remoteurl: string;
}

/** Docker Hub answers under several host names; containerd's ns says docker.io */
const DOCKER_HUB_HOSTS = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);

export function isDockerHub(remoteurl: string): boolean {
  return DOCKER_HUB_HOSTS.has(new URL(remoteurl).hostname);
}

export class MirrorRoutes<M extends MirrorPrefix> {
  constructor(readonly mirrors: readonly M[]) {}

  /** the mirror `name` is under, if any */
  of(name: string): M | undefined {
    return this.mirrors.find((mirror) => name.startsWith(`${mirror.prefix}/`));
  }

  /**
   * the name upstream: the prefix dropped; on Docker Hub a one-component name gets `library/`
   * as docker's own client does (`dockerhub/alpine` mirrors `library/alpine`)
   */
  remoteName(mirror: M, name: string): string {
    const rest = name.slice(mirror.prefix.length + 1);
    return isDockerHub(mirror.remoteurl) && !rest.includes('/') ? `library/${rest}` : rest;
  }

  /**
   * containerd's `?ns=<registry host>`: the name under the prefix of the upstream of that host
   * (`library/alpine` with ns=docker.io becomes `dockerhub/library/alpine`); undefined for a host
   * no upstream mirrors (the name is then the registry's own).
   */
  withNamespace(name: string, ns: string): string | undefined {
    const host = ns.toLowerCase();
    const mirror = this.mirrors.find((m) => {
      const url = new URL(m.remoteurl);
      return url.host === host || url.hostname === host || (DOCKER_HUB_HOSTS.has(host) && isDockerHub(m.remoteurl));
    });
    return mirror && `${mirror.prefix}/${name}`;
  }
}
