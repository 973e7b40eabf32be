/**
 * The server's open connections, by client address, with which of them are serving a request.
 * When the connection limit is reached it names the one to give up for a newcomer: from the
 * address that holds the most, the connection idle the longest, else the slowest one (issue 26:
 * three addresses holding every connection locked out every other client).
 */
import type { Socket } from 'node:net';

/** what the table needs of a socket: where it comes from, how much it carried */
type Wire = Pick<Socket, 'remoteAddress' | 'remotePort' | 'bytesRead' | 'bytesWritten'>;

export interface Connection<S extends Wire = Socket> {
  /** the socket the server accepted (for TLS, the one below the TLS layer) */
  readonly socket: S;
  readonly address: string;
  readonly openedAt: number;
  /** its remote address and port, by which a request's socket finds it */
  readonly ends: string;
  /** requests in flight on it (HTTP/2 runs several) */
  busy: number;
}

export class ConnectionTable<S extends Wire = Socket> {
  private readonly byAddress = new Map<string, Set<Connection<S>>>();
  /** per address, the connections without a request in flight, the longest idle first */
  private readonly idle = new Map<string, Set<Connection<S>>>();
  /** by remote address and port: a request's socket (TLS, HTTP/2) is not the accepted one, its ends are */
  private readonly byEnds = new Map<string, Connection<S>>();
  private count = 0;

  constructor(private readonly now: () => number = Date.now) {}

  get open(): number {
    return this.count;
  }

  held(address: string): number {
    return this.byAddress.get(address)?.size ?? 0;
  }

  add(socket: S): Connection<S> {
    const connection: Connection<S> = { socket, address: socket.remoteAddress ?? '', openedAt: this.now(), ends: ends(socket), busy: 0 };
    setOf(this.byAddress, connection.address).add(connection);
    setOf(this.idle, connection.address).add(connection);
    this.byEnds.set(connection.ends, connection);
    this.count++;
    return connection;
  }

  /** forgets a connection; calling it again (the socket's close after a reclaim) does nothing */
  remove(connection: Connection<S>): void {
    const mine = this.byAddress.get(connection.address);
    if (!mine?.delete(connection)) return;
    if (mine.size === 0) this.byAddress.delete(connection.address);
    const idle = this.idle.get(connection.address);
    idle?.delete(connection);
    if (idle?.size === 0) this.idle.delete(connection.address);
    if (this.byEnds.get(connection.ends) === connection) this.byEnds.delete(connection.ends);
    this.count--;
  }

  /** a request started on `wire` (its socket); the returned function marks its end (unknown connection: nothing to mark) */
  requestStarted(wire: Pick<Wire, 'remoteAddress' | 'remotePort'>): () => void {
    const connection = this.byEnds.get(ends(wire));
    if (!connection) return () => undefined;
    connection.busy++;
    const idle = this.idle.get(connection.address);
    idle?.delete(connection);
    if (idle?.size === 0) this.idle.delete(connection.address);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      connection.busy--;
      // still open: it goes to the end of its address's idle line
      if (connection.busy === 0 && this.byAddress.get(connection.address)?.has(connection)) setOf(this.idle, connection.address).add(connection);
    };
  }

  /**
   * The connection to give up so `address` may open one more: from the address holding the most,
   * the connection idle the longest, else the one that moved the fewest bytes per second since it
   * opened. None when that address would not still hold more than `address` afterwards: equal
   * holders cannot take connections from each other in turn.
   */
  reclaimFor(address: string): Connection<S> | undefined {
    let top: string | undefined;
    let most = 0;
    for (const [holder, connections] of this.byAddress) {
      if (connections.size > most) [top, most] = [holder, connections.size];
    }
    if (top === undefined || most < this.held(address) + 2) return undefined;
    const longestIdle = this.idle.get(top)?.values().next().value;
    if (longestIdle) return longestIdle;
    let slowest: Connection<S> | undefined;
    let lowest = Infinity;
    const now = this.now();
    for (const connection of this.byAddress.get(top)!) {
      // the accepted socket counts the bytes below TLS too
      const rate = (connection.socket.bytesRead + connection.socket.bytesWritten) / Math.max(1, now - connection.openedAt);
      if (rate < lowest) [slowest, lowest] = [connection, rate];
    }
    return slowest;
  }
}

function setOf<T>(map: Map<string, Set<T>>, key: string): Set<T> {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  return set;
}

function ends(wire: Pick<Wire, 'remoteAddress' | 'remotePort'>): string {
  return `${wire.remoteAddress ?? ''} ${wire.remotePort ?? ''}`;
}
