// bench/notifications.mjs — a burst of notification events into digests (issue 31): 10,000 distinct events over a
// fleet, emitted at once (one promise each, as the domain's listeners do), to an hourly digest rule on a signed webhook
// channel and a daily one on a Slack channel, both to a loopback HTTP receiver. Then the clock moves past the windows,
// the sweep sends both digests, and the receiver counts what each message says it holds (listed + "more"): every
// event must be in both, once. Prints wall time, events/s, heap before / peak / after, RSS and the stored log's size.
// Service, store and receiver run in this process, from the built dist/ (`npx tsc` first):
//   node bench/notifications.mjs [--events 10000] [--sites 500]
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../dist/config.js';
import { closeServices, openServices } from '../dist/domain/index.js';

const { values } = parseArgs({ options: { events: { type: 'string' }, sites: { type: 'string' } } });
const EVENTS = Number(values.events ?? 10_000);
const SITES = Number(values.sites ?? 500);
process.env.SITEFLEET_LOG ??= 'warn';

const got = [];
const rx = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    got.push({ path: req.url, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
    res.end('ok');
  });
});
await new Promise((r) => rx.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${rx.address().port}`;

const dir = mkdtempSync(join(tmpdir(), 'sitefleet-bench-notify-'));
const services = await openServices(loadConfig({ dataDir: join(dir, 'data'), allowPrivateSites: true }, {}));
const n = services.notifications;
let clock = Date.parse('2026-03-02T09:10:00Z');
n.now = () => clock;
try {
  const sites = await services.store.write((tx) =>
    Array.from({ length: SITES }, (_, i) => services.sites.insert(tx, { url: `https://site${i + 1}.example.com/`, name: `Site ${i + 1}` })),
  );
  const hook = (await n.addChannel({ name: 'hook', type: 'webhook', url: `${base}/hook` })).channel;
  const slack = (await n.addChannel({ name: 'slack', type: 'slack', url: `${base}/slack/T0/B0/X` })).channel;
  await n.addRule({ name: 'hourly', events: ['site.sync_failed', 'update.failed'], channel_id: hook.id, mode: 'hourly' });
  await n.addRule({ name: 'daily', events: ['site.sync_failed', 'update.failed'], channel_id: slack.id, mode: 'daily' });

  global.gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  let peak = heap0;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 20);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: EVENTS }, (_, i) => {
      const s = sites[i % SITES];
      return n.emit({
        event: i % 2 ? 'site.sync_failed' : 'update.failed',
        key: `bench:${i}`,
        site: { id: s.id, name: s.name, url: s.url },
        title: `Event ${i} on ${s.name}`,
        text: `${s.url}: something failed (${i}).`,
        data: { i },
      });
    }),
  );
  const burstMs = performance.now() - t0;
  const cpuMs = Object.values(process.cpuUsage(cpu0)).reduce((a, b) => a + b, 0) / 1000;
  peak = Math.max(peak, process.memoryUsage().heapUsed);
  clearInterval(sampler);
  global.gc?.();
  const heap1 = process.memoryUsage().heapUsed;
  const stored = [...services.store.all('notification_deliveries')];
  const storedBytes = Buffer.byteLength(JSON.stringify(stored));

  // Past both windows: the sweep closes the digests and sends them.
  clock = Date.parse('2026-03-03T00:00:30Z');
  const t1 = performance.now();
  await n.sweep();
  await n.settled();
  const sendMs = performance.now() - t1;
  const hookMsg = got.find((g) => g.path === '/hook')?.json;
  const slackMsg = got.find((g) => g.path.startsWith('/slack'))?.json;
  const hookCount = hookMsg ? hookMsg.items.length + hookMsg.dropped : 0;
  const slackCount = slackMsg ? Number(/digest: (\d+) events/.exec(slackMsg.text)?.[1] ?? 0) : 0;
  const mb = (b) => Math.round((b / 1048576) * 10) / 10;
  const row = {
    events: EVENTS,
    sites: SITES,
    burst_ms: Math.round(burstMs),
    events_per_s: Math.round((EVENTS / burstMs) * 1000),
    cpu_ms: Math.round(cpuMs),
    heap_before_mb: mb(heap0),
    heap_peak_mb: mb(peak),
    heap_after_mb: mb(heap1),
    rss_mb: mb(process.memoryUsage().rss),
    deliveries_stored: stored.length,
    stored_log_kb: Math.round(storedBytes / 1024),
    digest_send_ms: Math.round(sendMs),
    messages_received: got.length,
    hourly_webhook_digest_events: hookCount,
    daily_slack_digest_events: slackCount,
    lost: EVENTS - hookCount + (EVENTS - slackCount),
  };
  console.log(JSON.stringify(row));
  if (row.lost !== 0 || got.length !== 2) {
    console.error('events lost or messages missing');
    process.exitCode = 1;
  }
} finally {
  await closeServices(services);
  await new Promise((r) => rx.close(r));
  rmSync(dir, { recursive: true, force: true });
}
