/**
 * Reporting what a request did to the notifier (spec 6.2, 6.4): the edge knows the request, the
 * URLs and the actor; the notifier stamps id, time and source. Called after the core succeeded,
 * never awaited: building an event is synchronous and emitting only queues it. The audit log
 * (audit.ts) is told of the same writes.
 */
import { isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { auditWrite } from './audit.js';
import { grantOf } from './grants.js';
import { firstValue } from './headers.js';
import type { ActorRecord, EventAction, EventTarget, RequestRecord } from '../notifications/events.js';
import { manifestReferences } from '../registry/manifests/index.js';
import type { Services } from './context.js';

/** the media type Distribution reports for blob events */
export const BLOB_MEDIA_TYPE = 'application/octet-stream';

/** the agent behind the request: the authenticated user, `{}` when anonymous (spec 6.4) */
export function actorOf(req: FastifyRequest): ActorRecord {
  const user = grantOf(req).user;
  return user === undefined ? {} : { name: user };
}

/** the client's address as Distribution reports it: X-Forwarded-For, X-Real-Ip, else the socket's ip:port */
export function requestRecord(req: FastifyRequest): RequestRecord {
  const forwarded = [firstValue(req.headers['x-forwarded-for']), firstValue(req.headers['x-real-ip'])].find((v) => v !== undefined && isIP(v) !== 0);
  const socket = req.raw.socket;
  const ip = socket.remoteAddress ?? '';
  const addr = forwarded ?? (ip.includes(':') ? `[${ip}]:${socket.remotePort}` : `${ip}:${socket.remotePort}`);
  return { id: String(req.id), addr, host: req.headers.host ?? '', method: req.method, useragent: req.headers['user-agent'] ?? '' };
}

/** `kind`: what the target is, for the audit record (delete events name no kind) */
function emit(req: FastifyRequest, services: Services, action: EventAction, target: EventTarget, kind?: 'manifests' | 'blobs'): void {
  auditWrite(req, services, action, target, kind === 'manifests' ? 'manifest' : 'blob');
  if (services.events.active) services.events.emit({ action, target, request: requestRecord(req), actor: actorOf(req) });
}

/** some endpoint or the audit log wants this kind of event */
function wanted(services: Services, action: EventAction): boolean {
  return services.events.active || (services.audit !== undefined && action !== 'pull');
}

/** what push and pull targets of manifests and blobs share: the descriptor, the repository and, for endpoints, the URL */
function contentTarget(req: FastifyRequest, services: Services, kind: 'manifests' | 'blobs', c: { name: string; digest: string; mediaType: string; size: number }): EventTarget {
  const target: EventTarget = { mediaType: c.mediaType, digest: c.digest, size: c.size, length: c.size, repository: c.name };
  // only endpoints get the URL (the audit record names the repository and the digest): with none,
  // a push does not build it (docs/performance.md, "Pushes with the metadata index")
  if (services.events.active) target.url = services.urls.absolute(req, `/v2/${c.name}/${kind}/${c.digest}`);
  return target;
}

export interface ManifestEventInfo {
  name: string;
  digest: string;
  mediaType: string;
  size: number;
  tag?: string;
  /** the manifest's bytes, for `events.includereferences` */
  content: Buffer;
}

export function manifestEvent(req: FastifyRequest, services: Services, action: 'push' | 'pull', m: ManifestEventInfo): void {
  if (!wanted(services, action)) return;
  const target = contentTarget(req, services, 'manifests', m);
  if (m.tag !== undefined) target.tag = m.tag;
  if (services.options.includeReferences && services.events.active) target.references = manifestReferences(m.content);
  emit(req, services, action, target, 'manifests');
}

export function blobEvent(req: FastifyRequest, services: Services, action: 'push' | 'pull' | 'mount', b: { name: string; digest: string; size: number; from?: string }): void {
  if (!wanted(services, action)) return;
  const target = contentTarget(req, services, 'blobs', { ...b, mediaType: BLOB_MEDIA_TYPE });
  if (b.from !== undefined) target.fromRepository = b.from;
  emit(req, services, action, target, 'blobs');
}

/** delete events carry only the digest and the repository (spec 6.4) */
export function deleteEvent(req: FastifyRequest, services: Services, d: { name: string; digest: string }): void {
  if (!wanted(services, 'delete')) return;
  emit(req, services, 'delete', { digest: d.digest, repository: d.name });
}
