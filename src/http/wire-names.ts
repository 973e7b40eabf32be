/**
 * Names on the wire (DESIGN.md section 4): the spec's neutral `Registry-*` headers are always sent,
 * each with its `Docker-*` twin that real clients (docker, containerd, skopeo, podman) read.
 */
import type { FastifyReply } from 'fastify';

export const API_VERSION_HEADER = 'Registry-Distribution-API-Version';
export const API_VERSION = 'registry/2.0';
export const CONTENT_DIGEST_HEADER = 'Registry-Content-Digest';
export const UPLOAD_UUID_HEADER = 'Registry-Upload-UUID';

const REGISTRY_PREFIX = 'registry-';
const DOCKER_PREFIX = 'docker-';

/** adds the Docker-* twin of every Registry-* header already on the reply */
export function addDockerTwins(reply: FastifyReply): void {
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (name.startsWith(REGISTRY_PREFIX) && value !== undefined) {
      reply.header(DOCKER_PREFIX + name.slice(REGISTRY_PREFIX.length), value);
    }
  }
}
