/** Units of the connection table (src/http/connection-table.ts): which connection a newcomer takes when all are held. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConnectionTable } from '../../src/http/connection-table.js';

let port = 40000;
const socket = (address: string) => ({ remoteAddress: address, remotePort: port++, bytesRead: 0, bytesWritten: 0 });

describe('connection table', () => {
  it('takes from the address holding the most, the connection idle the longest first', () => {
    let now = 0;
    const table = new ConnectionTable<ReturnType<typeof socket>>(() => now);
    const [a1, a2, a3] = ['10.0.0.1', '10.0.0.1', '10.0.0.1'].map((a) => table.add(socket(a)));
    table.add(socket('10.0.0.2'));
    // a1 serves a request and goes idle again: a2 has been idle longer
    const end = table.requestStarted(a1.socket);
    assert.equal(table.reclaimFor('10.0.0.9'), a2);
    end();
    table.remove(a2);
    assert.equal(table.reclaimFor('10.0.0.9'), a3);
    assert.equal(table.open, 3);
    assert.equal(table.held('10.0.0.1'), 2);
  });

  it('takes the slowest busy connection when none is idle', () => {
    let now = 0;
    const table = new ConnectionTable<ReturnType<typeof socket>>(() => now);
    const fast = table.add(socket('10.0.0.1'));
    const slow = table.add(socket('10.0.0.1'));
    now = 10_000;
    const young = table.add(socket('10.0.0.1'));
    Object.assign(fast.socket, { bytesRead: 1_000_000 });
    Object.assign(slow.socket, { bytesRead: 2_000 });
    for (const c of [fast, slow, young]) table.requestStarted(c.socket);
    Object.assign(young.socket, { bytesRead: 10_000 });
    now = 10_100;
    // young: 10,000 bytes in 100 ms; slow: 2,000 in 10 s
    assert.equal(table.reclaimFor('10.0.0.2'), slow);
  });

  it('takes nothing from an address that would then hold no more than the newcomer', () => {
    const table = new ConnectionTable<ReturnType<typeof socket>>();
    for (const a of ['10.0.0.1', '10.0.0.1', '10.0.0.2', '10.0.0.2']) table.add(socket(a));
    assert.equal(table.reclaimFor('10.0.0.2'), undefined, 'an equal holder');
    table.remove(table.reclaimFor('10.0.0.3')!);
    assert.equal(table.reclaimFor('10.0.0.3'), table.reclaimFor('10.0.0.3'));
    table.add(socket('10.0.0.3'));
    assert.equal(table.reclaimFor('10.0.0.3'), undefined, 'holds 1 against 2');
    assert.equal(table.reclaimFor('10.0.0.4')?.address, '10.0.0.2');
  });

  it('forgets a connection once, and a request ending after its close changes nothing', () => {
    const table = new ConnectionTable<ReturnType<typeof socket>>();
    const c = table.add(socket('10.0.0.1'));
    const other = table.add(socket('10.0.0.1'));
    const end = table.requestStarted(c.socket);
    table.requestStarted(other.socket);
    table.remove(c);
    table.remove(c);
    table.remove(other);
    end();
    end();
    assert.equal(table.open, 0);
    assert.equal(table.held('10.0.0.1'), 0);
    assert.equal(table.reclaimFor('10.0.0.2'), undefined);
  });
});
