/** Repository names (spec 2.1) and tags. */
import { RegistryError } from './errors.js';

const COMPONENT = /^[a-z0-9]+(?:[._-][a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
export const MAX_NAME_LENGTH = 255;

export function isRepositoryName(name: string): boolean {
  return name.length > 0 && name.length <= MAX_NAME_LENGTH && name.split('/').every((c) => COMPONENT.test(c));
}

/** `name`, or a 400 NAME_INVALID naming the rule it breaks */
export function checkRepositoryName(name: string): string {
  if (name.length > MAX_NAME_LENGTH) {
    throw new RegistryError('NAME_INVALID', `invalid repository name: ${name.length} characters, the limit is ${MAX_NAME_LENGTH}`, { detail: { name } });
  }
  const bad = name.split('/').find((c) => !COMPONENT.test(c));
  if (bad !== undefined) {
    throw new RegistryError('NAME_INVALID', `invalid repository name ${JSON.stringify(name)}: component ${JSON.stringify(bad)} must match ${COMPONENT.source}`, { detail: { name } });
  }
  return name;
}

export function isTag(tag: string): boolean {
  return TAG.test(tag);
}

export function checkTag(tag: string): string {
  if (!TAG.test(tag)) {
    throw new RegistryError('TAG_INVALID', `invalid tag ${JSON.stringify(tag)}: must match ${TAG.source}`, { detail: { tag } });
  }
  return tag;
}

/** `**`, `team/*`, `team/app`: what auth.access, policies and API tokens take (config/schema.ts checks with it) */
export const REPOSITORY_GLOB = /^(\*\*|[a-z0-9*]+(?:[._-][a-z0-9*]+)*(?:\/(?:\*\*|[a-z0-9*]+(?:[._-][a-z0-9*]+)*))*)$/;

export function isRepositoryGlob(glob: string): boolean {
  return glob.length <= MAX_NAME_LENGTH && REPOSITORY_GLOB.test(glob);
}

/**
 * a repository glob as a regular expression: `*` matches within one path component, a `**`
 * component any number of them (`team/*`, `team/**`, `**`); used by auth.access and retention
 */
export function repositoryGlob(glob: string): RegExp {
  const source = glob
    .split('/')
    .map((part) => (part === '**' ? '.+' : part.split('*').map(escapeRegExp).join('[^/]*')))
    .join('/');
  return new RegExp(`^${source}$`);
}

/**
 * How specific a glob is: more literal characters first (an exact name beats every glob that
 * matches it: `hr` beats `**` however they are listed), then fewer `**`, then fewer `*` (`team/*`
 * beats `team/**`). Two globs that tie and both match a name are equally specific; the first
 * listed decides (config check can not tell whether two such globs overlap).
 */
function specificity(glob: string): [literal: number, doubleStars: number, stars: number] {
  const doubleStars = glob.split('**').length - 1;
  const stars = glob.split('*').length - 1 - 2 * doubleStars;
  return [glob.replace(/\*/g, '').length, doubleStars, stars];
}

/** sorts globs most specific first (auth.access and policies pick the first that matches) */
export function compareGlobs(a: string, b: string): number {
  const [x, y] = [specificity(a), specificity(b)];
  return y[0] - x[0] || x[1] - y[1] || x[2] - y[2];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
