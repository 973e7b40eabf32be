/**
 * Profiles on demand, the debug listener's equivalent of Distribution's /debug/pprof (Go's
 * net/http/pprof), for the process that serves the listener:
 * - /debug/pprof/profile?seconds=N: a CPU profile of the next N seconds (default 30, at most 300,
 *   fractions allowed), from V8's sampling profiler through node:inspector, as a .cpuprofile
 *   (Chrome DevTools, VS Code, speedscope open it); one at a time, another answers 409;
 * - /debug/pprof/heap: a heap snapshot now (.heapsnapshot, streamed as V8 writes it; the process
 *   pauses while V8 walks the heap, and the snapshot is about the size of the heap).
 * They exist only on the debug listener (http.debug.addr), which is never the registry's port.
 */
import { Session } from 'node:inspector/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { getHeapSnapshot } from 'node:v8';

export const PROFILE_PREFIX = '/debug/pprof';
const DEFAULT_SECONDS = 30;
const MAX_SECONDS = 300;

export type ProfileAnswer = { status: number; error: string } | undefined;

/** a CPU profile is running: the sampling profiler is one per process */
let cpuBusy = false;

/** answers a request under /debug/pprof; undefined when it has been answered, else the error to send */
export async function serveProfile(path: string, query: URLSearchParams, req: IncomingMessage, res: ServerResponse): Promise<ProfileAnswer> {
  if (path === `${PROFILE_PREFIX}/profile`) return cpuProfile(query, res);
  if (path === `${PROFILE_PREFIX}/heap`) return heapSnapshot(req, res);
  if (path === PROFILE_PREFIX || path === `${PROFILE_PREFIX}/`) {
    const text = `${PROFILE_PREFIX}/profile?seconds=N  CPU profile of the next N seconds (default ${DEFAULT_SECONDS}, at most ${MAX_SECONDS}): .cpuprofile JSON\n${PROFILE_PREFIX}/heap               heap snapshot now: .heapsnapshot JSON\n`;
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
    res.end(text);
    return undefined;
  }
  return { status: 404, error: `no such profile: ${path} (${PROFILE_PREFIX}/profile or ${PROFILE_PREFIX}/heap)` };
}

async function cpuProfile(query: URLSearchParams, res: ServerResponse): Promise<ProfileAnswer> {
  const raw = query.get('seconds');
  const seconds = raw === null ? DEFAULT_SECONDS : Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_SECONDS) {
    return { status: 400, error: `seconds must be a number of seconds above 0 and at most ${MAX_SECONDS}, got ${JSON.stringify(raw)}` };
  }
  if (cpuBusy) return { status: 409, error: 'a CPU profile is already being taken in this process; try again when it is done' };
  cpuBusy = true;
  const session = new Session();
  try {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    const { profile } = await session.post('Profiler.stop');
    const body = JSON.stringify(profile);
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'content-disposition': `attachment; filename="berth-${process.pid}-${Date.now()}.cpuprofile"`,
    });
    res.end(body);
    return undefined;
  } finally {
    session.disconnect();
    cpuBusy = false;
  }
}

async function heapSnapshot(req: IncomingMessage, res: ServerResponse): Promise<ProfileAnswer> {
  res.writeHead(200, { 'content-type': 'application/json', 'content-disposition': `attachment; filename="berth-${process.pid}-${Date.now()}.heapsnapshot"` });
  if (req.method === 'HEAD') {
    res.end();
    return undefined;
  }
  // a client that goes away mid-snapshot ends the stream; nothing else to clean up
  await pipeline(getHeapSnapshot(), res).catch(() => res.destroy());
  return undefined;
}
