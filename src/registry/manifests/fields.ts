/**
 * Checks shared by the manifest formats: JSON shapes and descriptors. Every failure is a
 * RegistryError whose detail names the check and the field (a JSON path like `layers[2].digest`).
 */
import { RegistryError } from '../errors.js';
import { parseDigest, type Digest } from '../digest.js';
import type { Descriptor, Platform } from './types.js';

export type JSONObject = Record<string, unknown>;

export function manifestInvalid(check: string, field: string | undefined, message: string, extra: JSONObject = {}): RegistryError {
  const where = field === undefined ? '' : `${field}: `;
  return new RegistryError('MANIFEST_INVALID', `manifest invalid: ${where}${message}`, { detail: { check, ...(field === undefined ? {} : { field }), ...extra } });
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string' ? JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value) : `${typeof value} ${JSON.stringify(value)}`;
}

export function isObject(value: unknown): value is JSONObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function requireObject(value: unknown, field: string): JSONObject {
  if (!isObject(value)) throw manifestInvalid('type', field, `must be an object, got ${value === undefined ? 'nothing' : describe(value)}`);
  return value;
}

export function requireString(doc: JSONObject, key: string, path: string, options: { nonEmpty?: boolean } = {}): string {
  const value = doc[key];
  const field = join(path, key);
  if (typeof value !== 'string') throw manifestInvalid('type', field, `must be a string, got ${value === undefined ? 'nothing' : describe(value)}`);
  if (options.nonEmpty && value === '') throw manifestInvalid('type', field, 'must not be empty');
  return value;
}

export function optionalString(doc: JSONObject, key: string, path: string): string | undefined {
  return doc[key] === undefined ? undefined : requireString(doc, key, path);
}

/** an array field; null or absent count as empty, as Go clients serialise nil slices as null */
export function arrayOrEmpty(doc: JSONObject, key: string, path: string): unknown[] {
  const value = doc[key];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw manifestInvalid('type', join(path, key), `must be an array, got ${describe(value)}`);
  return value;
}

export function optionalStringArray(doc: JSONObject, key: string, path: string): string[] | undefined {
  const value = doc[key];
  if (value === undefined) return undefined;
  const field = join(path, key);
  if (!Array.isArray(value)) throw manifestInvalid('type', field, `must be an array of strings, got ${describe(value)}`);
  value.forEach((item, i) => {
    if (typeof item !== 'string') throw manifestInvalid('type', `${field}[${i}]`, `must be a string, got ${describe(item)}`);
  });
  return value as string[];
}

export function optionalAnnotations(doc: JSONObject, key: string, path: string): Record<string, string> | undefined {
  const value = doc[key];
  if (value === undefined) return undefined;
  const field = join(path, key);
  if (!isObject(value)) throw manifestInvalid('annotations', field, `must be an object of strings, got ${describe(value)}`);
  for (const [name, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw manifestInvalid('annotations', `${field}.${name}`, `annotation values must be strings, got ${describe(v)}`);
  }
  return value as Record<string, string>;
}

export function requireSchemaVersion(doc: JSONObject, expected: number): void {
  if (doc.schemaVersion !== expected) {
    throw manifestInvalid('schemaVersion', 'schemaVersion', `must be ${expected}, got ${doc.schemaVersion === undefined ? 'nothing' : describe(doc.schemaVersion)}`, { expected, got: doc.schemaVersion ?? null });
  }
}

/** the body's `mediaType`, which, when a format requires or allows it, must be one of `allowed` */
export function checkBodyMediaType(doc: JSONObject, allowed: readonly string[], required: boolean): void {
  const value = doc.mediaType;
  if (value === undefined && !required) return;
  if (typeof value !== 'string' || !allowed.includes(value)) {
    throw manifestInvalid('mediaType', 'mediaType', `must be ${allowed.map((t) => JSON.stringify(t)).join(' or ')}, got ${value === undefined ? 'nothing' : describe(value)}`, { expected: allowed, got: value ?? null });
  }
}

/** an image manifest must not carry `manifests`, an index must not carry `config`/`layers`: a document readable as both is ambiguous (CVE-2021-41190) */
export function rejectForeignFields(doc: JSONObject, fields: readonly string[], kind: string): void {
  for (const field of fields) {
    if (doc[field] !== undefined) throw manifestInvalid('ambiguous', field, `a ${kind} must not have a "${field}" field`);
  }
}

/** a digest inside a manifest: malformed is DIGEST_INVALID, as Distribution answers */
export function requireDigest(doc: JSONObject, key: string, path: string): Digest {
  const value = requireString(doc, key, path);
  const field = join(path, key);
  try {
    return parseDigest(value);
  } catch (err) {
    const reason = err instanceof RegistryError ? err.message : String(err);
    throw new RegistryError('DIGEST_INVALID', `${field}: ${reason}`, { detail: { check: 'digest', field, digest: value } });
  }
}

function requireSize(doc: JSONObject, path: string): number {
  const value = doc.size;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw manifestInvalid('size', join(path, 'size'), `must be a non-negative integer, got ${value === undefined ? 'nothing' : describe(value)}`);
  }
  return value;
}

function optionalPlatform(doc: JSONObject, path: string): Platform | undefined {
  if (doc.platform === undefined) return undefined;
  const field = join(path, 'platform');
  const platform = requireObject(doc.platform, field);
  requireString(platform, 'architecture', field);
  requireString(platform, 'os', field);
  optionalString(platform, 'os.version', field);
  optionalStringArray(platform, 'os.features', field);
  optionalString(platform, 'variant', field);
  optionalStringArray(platform, 'features', field);
  return platform as unknown as Platform;
}

/** a descriptor at `path`, with the fields berth knows; others are dropped from the result (the body is stored as sent) */
export function requireDescriptor(value: unknown, path: string): Descriptor {
  const doc = requireObject(value, path);
  const descriptor: Descriptor = {
    mediaType: requireString(doc, 'mediaType', path, { nonEmpty: true }),
    digest: requireDigest(doc, 'digest', path),
    size: requireSize(doc, path),
  };
  const urls = optionalStringArray(doc, 'urls', path);
  const annotations = optionalAnnotations(doc, 'annotations', path);
  const artifactType = optionalString(doc, 'artifactType', path);
  const data = optionalString(doc, 'data', path);
  const platform = optionalPlatform(doc, path);
  if (urls !== undefined) descriptor.urls = urls;
  if (annotations !== undefined) descriptor.annotations = annotations;
  if (artifactType !== undefined) descriptor.artifactType = artifactType;
  if (data !== undefined) descriptor.data = data;
  if (platform !== undefined) descriptor.platform = platform;
  return descriptor;
}

export function descriptorList(doc: JSONObject, key: string): Descriptor[] {
  return arrayOrEmpty(doc, key, '').map((item, i) => requireDescriptor(item, `${key}[${i}]`));
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}
