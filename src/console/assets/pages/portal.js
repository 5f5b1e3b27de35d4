// The client portal (#/ for a `client` user): the one client the user is bound to, its sites (status, WordPress
// version, pending updates, last sync), each site's uptime and latest incidents, and its archived reports (each one's
// text opens in place). Read-only: no button here changes
// anything, and what the page may see is the registry's answer (the user's scope), not a filter of ours.
import { has, run } from '../api.js';
import { clear, errorText, h, pager, statusBadge, when } from '../dom.js';

const PER_PAGE = 10;
/** The latest incidents shown per site (list-incidents-v1 says how many there are in all). */
const INCIDENTS = 5;
/** The newest archived reports shown (list-client-reports-v1 says how many there are in all). */
const REPORTS = 20;

const pct = (n) => (n === null || n === undefined ? '–' : `${n.toFixed(2)} %`);
const MONITOR_LABEL = { up: 'Up', down: 'Down', pending: 'Not checked yet', paused: 'Paused' };
const monitorBadge = (status) => h('span', { class: `badge badge-monitor-${status}` }, MONITOR_LABEL[status] ?? status);

function duration(s) {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

const pending = (stats) => (stats ? stats.plugin_updates + stats.theme_updates + (stats.wp_update_available ? 1 : 0) : 0);

function siteCard(site, monitor, incidents) {
  const title = site.name || site.url;
  const id = `portal-site-${site.id}`;
  return h(
    'section',
    { class: 'card portal-site', 'aria-labelledby': id, dataset: { siteId: String(site.id) } },
    h('h2', { id }, title, ' ', statusBadge(site.status)),
    h('p', { class: 'muted' }, site.url),
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'WordPress'),
      h('dd', {}, site.wp_version || 'unknown'),
      h('dt', {}, 'Pending updates'),
      h('dd', {}, String(pending(site.stats))),
      h('dt', {}, 'Last sync'),
      h('dd', {}, when(site.last_sync)),
      h('dt', {}, 'Uptime'),
      h(
        'dd',
        {},
        monitor
          ? [
              monitorBadge(monitor.status),
              ` 24 h ${pct(monitor.uptime_24h)} · 7 d ${pct(monitor.uptime_7d)} · 30 d ${pct(monitor.uptime_30d)}`,
            ]
          : 'not monitored',
      ),
      h('dt', {}, 'Last check'),
      h('dd', {}, monitor ? when(monitor.last_check_at) : 'never'),
    ),
    h('h3', {}, `Incidents (${incidents.total})`),
    incidents.items.length
      ? h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            {},
            h('caption', { class: 'sr-only' }, `Incidents of ${title}`),
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Down from', 'Back up', 'Lasted', 'Cause'].map((c) => h('th', { scope: 'col' }, c)),
              ),
            ),
            h(
              'tbody',
              {},
              incidents.items.map((i) =>
                h(
                  'tr',
                  {},
                  h('td', {}, when(i.started_at)),
                  h('td', {}, i.resolved ? when(i.ended_at) : h('strong', { class: 'error' }, 'still down')),
                  h('td', {}, duration(i.duration_s)),
                  h('td', {}, i.http_code ? `${i.cause} (HTTP ${i.http_code})` : i.cause),
                ),
              ),
            ),
          ),
        )
      : h('p', { class: 'muted' }, 'No incidents.'),
  );
}

/** The client's archived reports, newest first; opening one loads its text render (shown as text, never as HTML). */
function reportsSection(reports) {
  const item = (r) => {
    const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
    let loaded = false;
    const el = h(
      'details',
      {
        class: 'portal-report',
        ontoggle: async () => {
          if (!el.open || loaded) return;
          loaded = true;
          try {
            const full = await run('get-client-report-v1', { report_id: r.id, format: 'text' });
            clear(body, h('pre', { class: 'report-text' }, full.text));
          } catch (e) {
            loaded = false;
            clear(body, errorText(e));
          }
        },
      },
      h('summary', {}, `${r.title} · ${r.period.from} – ${r.period.to}${r.sent_at ? ` · sent ${when(r.sent_at)}` : ''}`),
      h(
        'p',
        {},
        `${r.summary.updates} updates · uptime ${pct(r.summary.uptime_pct)} · ${r.summary.incidents} incidents · ` +
          `${r.summary.vulnerabilities_fixed} vulnerabilities fixed`,
      ),
      body,
    );
    return el;
  };
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'portal-reports' },
    h('h2', { id: 'portal-reports' }, `Reports (${reports.total})`),
    reports.items.length ? reports.items.map(item) : h('p', { class: 'muted' }, 'No reports yet.'),
  );
}

export async function render(main, _params, query) {
  const page = Math.max(1, Number.parseInt(query.get('page') ?? '1', 10) || 1);
  const [clients, list] = await Promise.all([run('list-clients-v1', { per_page: 1 }), run('list-sites-v1', { page, per_page: PER_PAGE })]);
  const client = clients.items[0];
  document.title = `${client ? client.name : 'Your sites'} · sitefleet`;
  if (!client) {
    clear(main, h('h1', {}, 'Your sites'), h('p', {}, 'Your account is bound to no client yet; ask your agency.'));
    return;
  }
  const ids = list.items.map((s) => s.id);
  const [monitors, details, incidents, reports] = await Promise.all([
    ids.length && run('list-monitors-v1', { include: ids, per_page: PER_PAGE }),
    Promise.all(ids.map((id) => run('get-site-v1', { site_id_or_domain: id, include_stats: true }))),
    Promise.all(ids.map((id) => run('list-incidents-v1', { site_id_or_domain: id, per_page: INCIDENTS }))),
    // The reports feature (issue 31) where the registry has it.
    has('list-client-reports-v1') && run('list-client-reports-v1', { client_id: client.id, per_page: REPORTS }),
  ]);
  const monitorOf = new Map((monitors ? monitors.items : []).map((m) => [m.id, m]));
  clear(
    main,
    h('h1', {}, client.name),
    h('p', { class: 'muted' }, `${list.total} ${list.total === 1 ? 'site' : 'sites'}, their uptime and incidents.`),
    details.map((s, n) => siteCard(s, monitorOf.get(s.id), incidents[n])),
    list.total > PER_PAGE ? pager(page, PER_PAGE, list.total, 'sites', (p) => `#/?page=${p}`) : null,
    reports ? reportsSection(reports) : null,
  );
}
