// The fleet at a glance: counts by status, the sites that need attention first, and the whole list with search,
// filters and server-side paging (every number comes from an ability: count-sites-v1, list-sites-v1, …).
import { has, may, run } from '../api.js';
import { actionButton, clear, field, h, notice, pager, section, statusBadge, table } from '../dom.js';

const PER_PAGE = 50;
const STATUSES = [
  ['any', 'All sites'],
  ['connected', 'Connected'],
  ['disconnected', 'Disconnected'],
  ['suspended', 'Suspended'],
  ['available_update', 'Pending updates'],
];

function hrefWith(query, changes) {
  const q = new URLSearchParams(query);
  for (const [k, v] of Object.entries(changes)) {
    if (v === '' || v === undefined || v === null) q.delete(k);
    else q.set(k, String(v));
  }
  const s = q.toString();
  return `#/${s ? `?${s}` : ''}`;
}

/** Tags and clients for the filters and the client column (the first 100 of each, by name). */
async function lookups() {
  const [tags, clients] = await Promise.all([
    run('list-tags-v1', { per_page: 100 }).catch(() => ({ items: [] })),
    run('list-clients-v1', { per_page: 100 }).catch(() => ({ items: [] })),
  ]);
  return { tags: tags.items, clients: clients.items };
}

function counts() {
  const grid = h('div', { class: 'counts' });
  const el = h('section', { class: 'counts-section', 'aria-label': 'Sites by status' }, grid);
  (async () => {
    const totals = await Promise.all(STATUSES.map(([status]) => run('count-sites-v1', { status }).then((r) => r.total)));
    clear(
      grid,
      STATUSES.map(([status, label], i) =>
        h(
          'a',
          { class: `count count-${status}`, href: hrefWith('', { status: status === 'any' ? '' : status }), id: `count-${status}` },
          h('span', { class: 'count-n' }, totals[i].toLocaleString()),
          h('span', { class: 'count-label' }, label),
        ),
      ),
    );
  })().catch((e) => clear(grid, h('p', { class: 'error' }, e.message)));
  return el;
}

function attention() {
  const siteList = (status, empty) => async () => {
    const r = await run('list-sites-v1', { status, per_page: 8 });
    if (!r.total) return h('p', { class: 'muted' }, empty);
    return h(
      'div',
      {},
      h(
        'ul',
        { class: 'plain' },
        r.items.map((s) => h('li', {}, h('a', { href: `#/sites/${s.id}`, title: s.url }, s.name))),
      ),
      r.total > r.items.length ? h('a', { href: hrefWith('', { status }) }, `All ${r.total.toLocaleString()} →`) : '',
    );
  };
  const abandoned = async () => {
    const r = await run('get-abandoned-plugins-v1', { per_page: 8 });
    if (!r.total) return h('p', { class: 'muted' }, 'No plugin unchanged for two years.');
    return h(
      'div',
      {},
      h(
        'ul',
        { class: 'plain' },
        r.items.map((p) =>
          h(
            'li',
            {},
            h('strong', {}, p.name || p.slug),
            ' on ',
            h('a', { href: `#/sites/${p.site_id}` }, p.site_url.replace(/^https?:\/\//, '')),
            h('span', { class: 'muted small' }, ` last updated ${p.last_updated ? p.last_updated.slice(0, 10) : 'unknown'}`),
          ),
        ),
      ),
      r.total > r.items.length ? h('p', { class: 'muted small' }, `${r.total.toLocaleString()} in all`) : '',
    );
  };
  const security = async () => {
    const r = await run('get-security-issues-v1', { per_page: 8 });
    if (!r.total) return h('p', { class: 'muted' }, 'No site reported an issue at its last sync.');
    const counts = (x) =>
      [
        ['high', x.high],
        ['medium', x.medium],
        ['low', x.low],
      ]
        .filter(([, n]) => n)
        .map(([sev, n]) => h('span', { class: `sev sev-${sev} small` }, ` ${n} ${sev}`));
    return h(
      'div',
      {},
      h(
        'ul',
        { class: 'plain' },
        r.items.map((x) => h('li', {}, h('a', { href: `#/sites/${x.site_id}` }, x.site_name), counts(x))),
      ),
      r.total > r.items.length ? h('p', { class: 'muted small' }, `${r.total.toLocaleString()} sites in all`) : '',
    );
  };
  const vulnerabilities = async () => {
    const r = await run('list-vulnerabilities-v1', { per_page: 8 });
    if (!r.feed.source) return h('p', { class: 'muted' }, 'No vulnerability feed loaded (settings: vulnerability_source).');
    if (!r.total) return h('p', { class: 'muted' }, 'No installed version is known to be vulnerable.');
    const sev = (x) => (x.severity === 'critical' || x.severity === 'high' ? 'high' : x.severity === 'medium' ? 'medium' : 'low');
    return h(
      'div',
      {},
      h(
        'ul',
        { class: 'plain' },
        r.items.map((x) =>
          h(
            'li',
            {},
            h('strong', {}, x.title),
            h('span', { class: `sev sev-${sev(x)} small` }, ` ${x.severity ?? 'unscored'}`),
            h(
              'span',
              { class: 'muted small' },
              ` ${x.sites_affected} site(s)${x.updates_pending ? `, ${x.updates_pending} fix pending` : ''}`,
            ),
          ),
        ),
      ),
      h(
        'p',
        { class: 'muted small' },
        h('a', { href: '#/vulnerabilities' }, `${r.total.toLocaleString()} in all`),
        `. Data: ${r.items[0]?.attribution.feed ?? r.feed.source}.`,
      ),
    );
  };
  return h(
    'div',
    { class: 'attention' },
    section('Disconnected or failing sync', siteList('disconnected', 'Every site answers.'), { class: 'warn' }),
    section('Pending updates', siteList('available_update', 'Everything is up to date.')),
    has('get-security-issues-v1') ? section('Security issues', security) : '',
    has('list-vulnerabilities-v1') ? section('Known vulnerabilities', vulnerabilities) : '',
    section('Abandoned plugins', abandoned),
  );
}

export async function render(main, _params, query) {
  const page = Math.max(1, Number(query.get('page')) || 1);
  const status = STATUSES.some(([s]) => s === query.get('status')) ? query.get('status') : 'any';
  const search = query.get('search') ?? '';
  const tagId = Number(query.get('tag')) || undefined;
  const clientId = Number(query.get('client')) || undefined;
  const { tags, clients } = await lookups();
  const clientName = new Map(clients.map((c) => [c.id, c.name]));

  const searchInput = h('input', { type: 'search', name: 'search', value: search, placeholder: 'Name, URL or ID' });
  const statusSelect = h(
    'select',
    { name: 'status' },
    STATUSES.map(([s, label]) => h('option', { value: s, selected: s === status }, label)),
  );
  const tagSelect = h(
    'select',
    { name: 'tag' },
    h('option', { value: '' }, 'Any tag'),
    tags.map((t) => h('option', { value: t.id, selected: t.id === tagId }, t.name)),
  );
  const clientSelect = h(
    'select',
    { name: 'client' },
    h('option', { value: '' }, 'Any client'),
    clients.map((c) => h('option', { value: c.id, selected: c.id === clientId }, c.name)),
  );
  const filters = h(
    'form',
    {
      class: 'filters',
      role: 'search',
      onsubmit: (ev) => {
        ev.preventDefault();
        location.hash = hrefWith('', {
          search: searchInput.value.trim(),
          status: statusSelect.value === 'any' ? '' : statusSelect.value,
          tag: tagSelect.value,
          client: clientSelect.value,
        });
      },
    },
    field('Search', searchInput),
    field('Status', statusSelect),
    field('Tag', tagSelect),
    field('Client', clientSelect),
    h('button', { type: 'submit', class: 'btn' }, 'Filter'),
  );

  const list = await run('list-sites-v1', { page, per_page: PER_PAGE, status, search, tag_id: tagId, client_id: clientId });
  const canSync = may('sync-sites-v1');
  const picked = new Set();
  const rows = list.items.map((s) => [
    ...(canSync
      ? [
          h('input', {
            type: 'checkbox',
            'aria-label': `Select ${s.name}`,
            onchange: (ev) => {
              if (ev.target.checked) picked.add(s.id);
              else picked.delete(s.id);
            },
          }),
        ]
      : []),
    h('span', {}, h('a', { href: `#/sites/${s.id}` }, s.name), h('br'), h('span', { class: 'url small' }, s.url)),
    statusBadge(s.status),
    s.client_id ? (clientName.get(s.client_id) ?? `#${s.client_id}`) : h('span', { class: 'muted' }, '—'),
  ]);

  const sync = async (ids) => {
    const r = await run('sync-sites-v1', ids ? { site_ids_or_domains: ids } : {});
    if (r.queued) {
      location.hash = `#/jobs/${r.job_id}`;
      return;
    }
    notice(`Synced ${r.total_synced} site(s)${r.total_errors ? `; ${r.total_errors} failed` : ''}.`, r.total_errors ? 'error' : 'ok');
    location.hash = hrefWith(query, {}) + (location.hash.includes('?') ? '&' : '?') + `t=${Date.now()}`;
  };
  const actions = canSync
    ? h(
        'div',
        { class: 'actions' },
        actionButton('Sync selected', async () => {
          if (!picked.size) return notice('Select sites first.', 'error');
          await sync([...picked]);
        }),
        actionButton('Sync all sites', () => sync(null), { attrs: { id: 'sync-all' } }),
      )
    : '';

  // Adding a site is where an empty fleet starts: the link is there for an administrator, and leads the empty list.
  const adding = may('add-site-v1');
  const addLink = (label) => h('a', { class: 'btn btn-primary', href: '#/sites/new', id: 'add-site' }, label);
  const empty =
    adding && !list.total && !query.toString()
      ? h('span', {}, 'No sites yet. ', h('a', { href: '#/sites/new' }, 'Add the first one.'))
      : 'No site matches.';
  clear(
    main,
    h('div', { class: 'page-head' }, h('h1', {}, 'Fleet'), adding ? addLink('Add a site') : ''),
    counts(),
    h('h2', { class: 'sr-only' }, 'Needs attention'),
    attention(),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'h-sites' },
      h('h2', { id: 'h-sites' }, 'Sites'),
      filters,
      actions,
      table('Sites', [...(canSync ? [h('span', { class: 'sr-only' }, 'Select')] : []), 'Site', 'Status', 'Client'], rows, empty),
      pager(page, PER_PAGE, list.total, 'sites', (p) => hrefWith(query, { page: p, t: '' })),
    ),
  );
}
