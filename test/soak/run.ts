/**
 * `npm run soak`: one soak run (soak.ts) with its report on stdout; exit 0 when it passed.
 * SOAK_SECONDS (default 1800) of load, SOAK_CLIENTS (default 4) concurrent clients, SOAK_SEED to
 * replay the choices of a run (the timing of faults and requests still varies).
 */
import { formatReport, passed, runSoak } from './soak.js';

const seconds = Number(process.env.SOAK_SECONDS ?? 1800);
const clients = Number(process.env.SOAK_CLIENTS ?? 4);
const seed = process.env.SOAK_SEED ? Number(process.env.SOAK_SEED) : Math.floor(Math.random() * 0xffffffff);
if (!(seconds > 0) || !(clients > 0) || !Number.isInteger(seed)) {
  console.error('soak: SOAK_SECONDS and SOAK_CLIENTS must be positive numbers, SOAK_SEED an integer');
  process.exit(2);
}
// exit (not death by the signal) runs the helpers' exit hooks: they stop Ceph and every server started
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`soak: ${signal}, stopping every server`);
    process.exit(130);
  });
}
const report = await runSoak({ seconds, clients, seed, log: (line) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`) });
console.log(formatReport(report));
process.exit(passed(report) ? 0 : 1);
