/**
 * What the cache served from storage (hits) and fetched from upstreams (misses, bytes), for
 * /debug/vars' `proxy` section and Prometheus, as Distribution's proxy metrics count them.
 */
export class ProxyStats {
  blobRequests = 0;
  blobHits = 0;
  blobMisses = 0;
  blobBytesFetched = 0;
  manifestRequests = 0;
  manifestHits = 0;
  manifestMisses = 0;
  manifestBytesFetched = 0;

  snapshot(): Record<string, number> {
    return { ...(this as unknown as Record<string, number>) };
  }
}
