/**
 * Search over the index: repositories, tags whose name starts with the text,
 * manifests whose digest starts with it (`sha256:` may be left out), and labels or annotations
 * whose value starts with it. Each kind is one bounded query over a range of an index (the
 * repositories' primary key, tags_by_name, manifests_by_digest, manifest_values_by_value): a
 * prefix, not a substring, because a substring is a scan of every row (30 ms over 100,000
 * repository names; the repository listing's `q` filters by substring within its scan budget).
 *
 * The caller's view (which repositories it may see) is a predicate; rows it may not see are
 * dropped after reading, so each kind reads at most OVERREAD times the results it returns.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

export interface SearchResults {
  /** names starting with the text (lower-cased: names are) */
  repositories: string[];
  tags: { repository: string; tag: string; digest: string }[];
  digests: { repository: string; digest: string; mediaType: string }[];
  values: { repository: string; digest: string; kind: 'label' | 'annotation'; key: string; value: string }[];
  /** a kind had more hits than were returned */
  truncated: boolean;
}

/** rows read per kind for each result wanted, so results the caller may not see leave room for others */
const OVERREAD = 4;
const HEX = /^[a-f0-9]+$/;
const DIGEST_PREFIX = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]*$/;

export class SearchReads {
  constructor(private readonly db: Kysely<Database>) {}

  async search(text: string, limit: number, visible: (repository: string) => boolean): Promise<SearchResults> {
    const read = limit * OVERREAD;
    let truncated = false;
    const keep = <T extends { repository: string }>(rows: T[]): T[] => {
      const seen = rows.filter((r) => visible(r.repository));
      if (seen.length > limit || rows.length >= read) truncated = true;
      return seen.slice(0, limit);
    };
    const digest = digestPrefix(text);
    const [repositories, tags, digests, values] = await Promise.all([
      this.db
        .selectFrom('repositories')
        .select('name as repository')
        .where('has_manifests', '=', 1)
        .where('name', '>=', text.toLowerCase())
        .where('name', '<', upperBound(text.toLowerCase()))
        .orderBy('name')
        .limit(read)
        .execute(),
      this.db.selectFrom('tags').select(['repository', 'name as tag', 'digest']).where('name', '>=', text).where('name', '<', upperBound(text)).orderBy('name').orderBy('repository').limit(read).execute(),
      digest
        ? this.db
            .selectFrom('manifests')
            .select(['repository', 'digest', 'media_type as mediaType'])
            .where('digest', '>=', digest)
            .where('digest', '<', upperBound(digest))
            .orderBy('digest')
            .orderBy('repository')
            .limit(read)
            .execute()
        : [],
      this.db
        .selectFrom('manifest_values')
        .select(['repository', 'digest', 'kind', 'key', 'value'])
        .where('value', '>=', text)
        .where('value', '<', upperBound(text))
        .orderBy('value')
        .orderBy('repository')
        .orderBy('digest')
        .limit(read)
        .execute(),
    ]);
    return { repositories: keep(repositories).map((r) => r.repository), tags: keep(tags), digests: keep(digests), values: keep(values), truncated };
  }
}

/** the digest prefix the text names: `sha256:ab...`, or hex alone (taken as sha256) */
function digestPrefix(text: string): string | undefined {
  if (HEX.test(text)) return `sha256:${text}`;
  return DIGEST_PREFIX.test(text) ? text : undefined;
}

/** the least string above every string that starts with `prefix` (code-unit order) */
function upperBound(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}
