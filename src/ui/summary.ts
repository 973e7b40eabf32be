/**
 * What the interface shows of a manifest without a person reading its JSON: the image's size
 * (config + layers; for a list or index, its children's), its platforms and when it was built
 * (the image config's `created`). Read through the ContentSource, as GET of the API reads.
 */
import type { Readable } from 'node:stream';
import { isDigest, type Digest } from '../registry/digest.js';
import type { ContentSource } from '../registry/content.js';
import { mapLimited } from '../registry/pool.js';
import type { ManifestDoc, Summary } from './wire.js';

/** manifest reads one summary keeps in flight (a page of tags multiplies it by its own) */
export const CHILD_CONCURRENCY = 4;
/** image configs above this are not read for their `created` (real ones are a few KiB) */
export const CONFIG_LIMIT = 1024 * 1024;

export const isIndex = (doc: ManifestDoc): boolean => Array.isArray(doc.manifests);

/** os/architecture[/variant]; a part that is not a string (an image config is any JSON) as its JSON */
export function platformName(p: { os?: unknown; architecture?: unknown; variant?: unknown } | null | undefined): string | undefined {
  if (!p?.os && !p?.architecture) return undefined;
  const part = (value: unknown) => (value === undefined || value === null ? '?' : typeof value === 'string' ? value : JSON.stringify(value));
  return [part(p.os), part(p.architecture), ...(p.variant ? [part(p.variant)] : [])].join('/');
}

export function parseManifest(content: Buffer): ManifestDoc {
  return JSON.parse(content.toString('utf8')) as ManifestDoc;
}

export async function summarize(content: ContentSource, name: string, stored: { digest: string; mediaType: string; content: Buffer }): Promise<Summary> {
  const doc = parseManifest(stored.content);
  const base = { digest: stored.digest, mediaType: stored.mediaType, artifactType: doc.artifactType };
  if (isIndex(doc)) {
    const children = await mapLimited(doc.manifests!, CHILD_CONCURRENCY, async (child) => {
      if (!isDigest(child.digest)) return undefined;
      try {
        return await summarize(content, name, await content.manifest(name, { digest: child.digest }));
      } catch {
        return undefined; // a child that is missing leaves the total unknown, not the page broken
      }
    });
    const platforms = doc.manifests!.map((m) => platformName(m.platform)).filter((p): p is string => p !== undefined);
    const sizes = children.map((c) => c?.size);
    const created = children.map((c) => c?.created).filter((c): c is string => c !== undefined).sort().pop();
    return { ...base, platforms, created, size: sizes.every((s) => s !== undefined) ? sizes.reduce((a, b) => a + b!, 0) : undefined };
  }
  if (doc.fsLayers) return { ...base, ...(await schema1Summary(content, name, doc)) };
  const parts = [...(doc.config ? [doc.config] : []), ...(doc.layers ?? [])];
  const size = parts.every((p) => typeof p.size === 'number') ? parts.reduce((a, p) => a + p.size!, 0) : undefined;
  const config = await readConfig(content, name, doc);
  const platform = platformName(config);
  // an artifact's config is mostly `{}`: its manifest's annotation says when it was made (oras writes it)
  const annotated = doc.annotations?.['org.opencontainers.image.created'];
  const created = typeof config?.created === 'string' ? config.created : typeof annotated === 'string' ? annotated : undefined;
  return { ...base, size, platforms: platform ? [platform] : [], created };
}

/** the image config as JSON, when the manifest has one that is small and JSON; undefined otherwise */
export async function readConfig(content: ContentSource, name: string, doc: ManifestDoc): Promise<Record<string, unknown> | undefined> {
  const config = doc.config;
  if (!config || !isDigest(config.digest) || !config.mediaType?.endsWith('json') || (config.size ?? 0) > CONFIG_LIMIT) return undefined;
  try {
    const parsed: unknown = JSON.parse((await readBlob(content, name, config.digest, CONFIG_LIMIT)).toString('utf8'));
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** a blob's bytes, refused above `limit` */
export async function readBlob(content: ContentSource, name: string, digest: Digest, limit: number): Promise<Buffer> {
  const stat = await content.statBlob(name, digest);
  if (stat.size > limit) throw new Error(`blob ${digest} is over ${limit} bytes`);
  const chunks: Buffer[] = [];
  for await (const chunk of (await content.openBlob(name, digest)) as Readable) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** first-generation manifests list layers without sizes: they are looked up */
async function schema1Summary(content: ContentSource, name: string, doc: ManifestDoc): Promise<Omit<Summary, 'digest' | 'mediaType'>> {
  const unique = [...new Set(doc.fsLayers!.map((l) => l.blobSum))];
  const sizes = await mapLimited(unique, CHILD_CONCURRENCY, async (digest) => {
    if (!isDigest(digest)) return undefined;
    try {
      return (await content.statBlob(name, digest)).size;
    } catch {
      return undefined;
    }
  });
  let created: string | undefined;
  try {
    const top = JSON.parse(doc.history?.[0]?.v1Compatibility ?? '{}') as { created?: unknown };
    if (typeof top.created === 'string') created = top.created;
  } catch {
    // a history entry that is not JSON: no build time
  }
  return {
    size: sizes.every((s) => s !== undefined) ? sizes.reduce((a, b) => a + b!, 0) : undefined,
    platforms: doc.architecture ? [`linux/${doc.architecture}`] : [],
    created,
  };
}
