// bench/monitors.mjs — the monitoring round of the bench on its own (bench/lib/monitors.mjs):
//
//   npm run build && node bench/monitors.mjs [--sites 5000] [--interval 60] [--seconds 150] [--latency 20]
//
// Figures are noisy on a shared machine: the JSON says how busy the rest of the machine was (others_cores).
import { parseArgs } from 'node:util';
import { cleanupAll, snapshotDist } from './lib/proc.mjs';
import { monitorsRound } from './lib/monitors.mjs';

const { values } = parseArgs({
  options: { sites: { type: 'string' }, interval: { type: 'string' }, seconds: { type: 'string' }, latency: { type: 'string' } },
});
process.on('SIGINT', () => {
  cleanupAll();
  process.exit(130);
});
snapshotDist();
const num = (v, d) => (v === undefined ? d : Number(v));
const result = await monitorsRound(
  {
    sites: num(values.sites, 5000),
    interval: num(values.interval, 60),
    seconds: num(values.seconds, 150),
    latency: num(values.latency, 20),
  },
  (m) => process.stderr.write(`[monitors] ${m}\n`),
);
process.stdout.write(JSON.stringify(result, null, 2) + '\n');
cleanupAll();
process.exit(0);
