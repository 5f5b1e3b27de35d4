// bench/site-data-views.mjs — the first views of the three fleet-wide indexes over site data (pending updates,
// security issues, abandoned plugins) in a fresh process, on the default engine, with the site-data ids they read.
//   node bench/site-data-views.mjs [--sites 20000] [--dir /tmp/sitefleet-site-data-views] [--dist dist]
//     [--order pending,security,abandoned] [--edits 20]
// Then --edits times: one site's notes edited, and the three views asked again (what each costs after an edit, p50).
// The data dir is seeded once (sites with a last sync and stored data) and kept for later runs, so that runs of two
// builds (--dist: another build's dist directory, with node_modules beside it) can alternate on the same fleet.
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    sites: { type: 'string', default: '20000' },
    dir: { type: 'string', default: '/tmp/sitefleet-site-data-views' },
    dist: { type: 'string', default: join(import.meta.dirname, '..', 'dist') },
    order: { type: 'string', default: 'pending,security,abandoned' },
    edits: { type: 'string', default: '20' },
  },
});
const n = Number(args.sites);
const dist = resolve(args.dist);
const load = (file) => import(pathToFileURL(join(dist, file)).href);
const { loadConfig } = await load('config.js');
const { openServices, closeServices } = await load('domain/index.js');
const open = () => openServices(loadConfig({ dataDir: args.dir }, {}));

const plugin = (i, k) => ({
  slug: `p${k}/p${k}.php`,
  name: `Plugin ${k}`,
  version: '1.0',
  active: true,
  update_version: (i + k) % 4 === 0 ? '1.1' : null,
  last_updated: k % 10 === 0 ? '2019-05-01' : '2026-01-01',
  must_use: false,
});

/** Site i's data: 20 plugins (a quarter with an update, two abandoned), 3 themes, issues on a third of the sites. */
const dataOf = (i) => ({
  plugins: Array.from({ length: 20 }, (_, k) => plugin(i, k)),
  themes: Array.from({ length: 3 }, (_, k) => ({ ...plugin(i, k + 1), slug: `t${k}`, name: `Theme ${k}` })),
  security: i % 3 === 0 ? [{ type: 'db_prefix', severity: 'medium', message: 'uses wp_' }] : [],
  changes: [],
  users: [],
  synced_at: '2026-01-01T00:00:00.000Z',
});

if (!existsSync(join(args.dir, 'seeded'))) {
  const s = await open();
  for (let start = 0; start < n; start += 2000) {
    await s.store.write((tx) => {
      for (let i = start; i < Math.min(n, start + 2000); i++) {
        const site = s.sites.insert(tx, {
          url: `https://site${i + 1}.example.com/`,
          name: `Site ${i + 1}`,
          admin_username: 'admin',
          wp_version: '6.8',
          php_version: '8.2',
          child_version: '6.1',
          last_sync: '2026-01-01T00:00:00.000Z',
        });
        tx.putBlob('site-data', site.id, dataOf(i));
      }
    });
  }
  await closeServices(s);
  writeFileSync(join(args.dir, 'seeded'), String(n));
  console.log(`seeded ${n} sites in ${args.dir}`);
}

const s = await open();
try {
  let ids = 0;
  const readBlobs = s.store.readBlobs.bind(s.store);
  s.store.readBlobs = (kind, list) => {
    if (kind === 'site-data') ids += list.length;
    return readBlobs(kind, list);
  };
  const time = async (fn) => {
    const t0 = performance.now();
    const r = await fn();
    return { ms: Math.round(performance.now() - t0), r };
  };
  const views = {
    pending: async () => (await s.updates.list({}, [], 1, 1)).total,
    security: async () => (await s.fleetSecurity.sitesWithIssues()).length,
    abandoned: async () => (await s.siteData.abandoned('plugins', { page: 1, per_page: 1 })).total,
  };
  const out = { dist, sites: [...s.store.all('sites')].length, total_ms: 0 };
  for (const name of args.order.split(',')) {
    const t = await time(views[name]);
    out[`${name}_ms`] = t.ms;
    out[`${name}_answer`] = t.r;
    out.total_ms += t.ms;
  }
  // An edit moves the site's stamp (its data is read again) but not what is derived from it.
  const after = [];
  for (let k = 0; k < Number(args.edits); k++) {
    await s.sites.edit(1 + ((k * 7919) % out.sites), { notes: `edit ${k}` });
    let ms = 0;
    for (const name of args.order.split(',')) ms += (await time(views[name])).ms;
    after.push(ms);
  }
  after.sort((a, b) => a - b);
  if (after.length) out.views_after_an_edit_p50_ms = after[Math.floor(after.length / 2)];
  globalThis.gc?.(); // with node --expose-gc: what the indexes keep, not garbage
  const heap_mb = Math.round(process.memoryUsage().heapUsed / 2 ** 20);
  console.log(JSON.stringify({ ...out, site_data_ids_read: ids, heap_mb }));
} finally {
  await closeServices(s);
}
