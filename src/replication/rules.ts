/**
 * A replication rule as this room sees it (the composition root hands it over, passwords already
 * read from their files), and what it selects: repositories by glob, tags by regular expression,
 * the children of an index by platform.
 */
import type { Platform } from '../registry/manifests/index.js';
import { repositoryGlob } from '../registry/names.js';

export interface RemoteOptions {
  /** the remote registry's base URL; credentials go only to it (and the token realm it names, proxy/hosts.ts) */
  url: string;
  username?: string;
  password?: string;
  realmhosts?: readonly string[];
  redirecthosts?: readonly string[];
}

export interface ReplicationRule {
  name: string;
  /** pull: the remote's content is copied into berth; push: berth's pushes (and deletes) go to the remote */
  direction: 'pull' | 'push';
  remote: RemoteOptions;
  repositories: readonly string[];
  /** regular expressions, any of which a tag must match; undefined: every tag */
  tags?: readonly string[];
  /** pull: `os/arch[/variant]` of the children of an index to copy; undefined: every child */
  platforms?: readonly string[];
  /** pull: ms between scheduled runs; undefined: only `berth replicate run` */
  interval?: number;
  /** push: deletes go to the remote too */
  deletes: boolean;
  /** requests at once against the remote */
  concurrency: number;
}

/** cosign's tags for a subject's signature, attestations and SBOM: `sha256-<hex>.sig` (.att, .sbom) */
export const COSIGN_SUFFIXES = ['sig', 'att', 'sbom'] as const;
const REFERRER_TAG = /^(sha256|sha384|sha512)-[0-9a-f]+(\.(sig|att|sbom))?$/;

/** true for the tags that stand for a referrer: cosign's, and the OCI referrers tag schema's `sha256-<hex>` */
export function isReferrerTag(tag: string): boolean {
  return REFERRER_TAG.test(tag);
}

/** the tag schema's name for `digest` (`sha256:ab..` -> `sha256-ab..`), with cosign's suffix when given */
export function referrerTag(digest: string, suffix?: string): string {
  const tag = digest.replace(':', '-');
  return suffix ? `${tag}.${suffix}` : tag;
}

export class RuleFilter {
  private readonly globs: RegExp[];
  private readonly tagPatterns?: RegExp[];
  private readonly platformSet?: Set<string>;
  /** the repositories named without a wildcard: a remote without a catalog can still be read for them */
  readonly literalRepositories?: string[];

  constructor(rule: Pick<ReplicationRule, 'repositories' | 'tags' | 'platforms'>) {
    this.globs = rule.repositories.map(repositoryGlob);
    this.tagPatterns = rule.tags?.map((source) => new RegExp(source));
    this.platformSet = rule.platforms && new Set(rule.platforms);
    if (rule.repositories.every((glob) => !glob.includes('*'))) this.literalRepositories = [...rule.repositories];
  }

  repository(name: string): boolean {
    return this.globs.some((glob) => glob.test(name));
  }

  /** a tag the rule copies; a referrer's tag goes with its subject, whatever the patterns say */
  tag(tag: string): boolean {
    return !this.tagPatterns || isReferrerTag(tag) || this.tagPatterns.some((pattern) => pattern.test(tag));
  }

  /** whether every child of an index is copied */
  get allPlatforms(): boolean {
    return this.platformSet === undefined;
  }

  /** a child of an index the rule copies: one of its platforms, or a child without a platform (an attestation) */
  platform(platform: Platform | undefined): boolean {
    if (!this.platformSet || !platform) return true;
    return this.platformSet.has(`${platform.os}/${platform.architecture}`) || this.platformSet.has(`${platform.os}/${platform.architecture}/${platform.variant ?? ''}`);
  }
}
