// One site: its facts, client and tags, pending updates, plugins, themes, security, changes and costs, and the
// actions on it (sync, check, reconnect, suspend, plugin and theme switches, removal after a dry-run preview).
import { may, run } from '../api.js';
import { actionButton, clear, confirmDialog, field, h, notice, section, statusBadge, table, when } from '../dom.js';

export async function render(main, [idText]) {
  const id = Number(idText);
  const s = await run('get-site-v1', { site_id_or_domain: id, include_stats: true });
  const again = () => render(main, [idText]);

  const act = async (label, ability, input, done) => {
    const r = await run(ability, input);
    notice(done(r), r.errors?.length || r.total_errors ? 'error' : 'ok');
    await again();
  };
  const actions = h(
    'div',
    { class: 'actions', 'aria-label': 'Site actions', role: 'group' },
    may('sync-sites-v1')
      ? actionButton(
          'Sync',
          () =>
            act('Sync', 'sync-sites-v1', { site_ids_or_domains: [id] }, (r) =>
              r.total_synced ? 'Synced.' : `Sync failed: ${r.errors?.[0]?.message ?? 'unknown error'}`,
            ),
          { class: 'btn-primary', attrs: { id: 'sync' } },
        )
      : '',
    may('get-admin-login-url-v1')
      ? actionButton(
          'Open WP Admin',
          async () => {
            // The tab is opened in the click itself (not a blocked pop-up) and sent to the one-time link once it is made:
            // sitefleet redirects it to the site's signed login, which logs it in as the site's administrator.
            const tab = window.open('', '_blank');
            try {
              const r = await run('get-admin-login-url-v1', { site_id_or_domain: id });
              if (!tab) return location.assign(r.url);
              tab.opener = null;
              tab.location.href = r.url;
            } catch (e) {
              tab?.close();
              throw e;
            }
          },
          { attrs: { id: 'open-wp-admin' } },
        )
      : '',
    may('check-site-v1')
      ? actionButton('Check', () =>
          act('Check', 'check-site-v1', { site_id_or_domain: id }, (r) =>
            r.reachable ? `Reachable (HTTP ${r.http_status}, ${r.response_time_ms} ms).` : `Not reachable (HTTP ${r.http_status}).`,
          ),
        )
      : '',
    may('reconnect-site-v1')
      ? actionButton('Reconnect', () =>
          act('Reconnect', 'reconnect-site-v1', { site_id_or_domain: id }, (r) => (r.reconnected ? 'Reconnected.' : 'Not reconnected.')),
        )
      : '',
    s.status === 'suspended'
      ? may('unsuspend-site-v1')
        ? actionButton('Unsuspend', () => act('Unsuspend', 'unsuspend-site-v1', { site_id_or_domain: id }, () => 'Unsuspended.'))
        : ''
      : may('suspend-site-v1')
        ? actionButton('Suspend', () => act('Suspend', 'suspend-site-v1', { site_id_or_domain: id }, () => 'Suspended.'))
        : '',
    may('delete-site-v1')
      ? actionButton(
          'Remove…',
          async () => {
            const preview = await run('delete-site-v1', { site_id_or_domain: id, dry_run: true });
            if (!(await confirmDialog(`Remove ${preview.site.name}?`, preview.warnings, 'Remove site'))) return;
            const r = await run('delete-site-v1', { site_id_or_domain: id, confirm: true });
            notice(`Removed ${r.site.name}.${r.warnings.length ? ` ${r.warnings.join(' ')}` : ''}`);
            location.hash = '#/';
          },
          { class: 'btn-danger' },
        )
      : '',
  );

  const st = s.stats ?? {};
  const facts = h(
    'dl',
    { class: 'facts' },
    [
      ['Status', statusBadge(s.status)],
      ['URL', h('a', { href: s.url, rel: 'noopener noreferrer', target: '_blank' }, s.url)],
      ['WordPress', s.wp_version || '—'],
      ['PHP', s.php_version || '—'],
      ['Child plugin', s.child_version || '—'],
      ['Last sync', when(s.last_sync)],
      ['Admin user', s.admin_username || '—'],
      ['Health score', st.health_score ?? '—'],
      ['Notes', s.notes || '—'],
    ].map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
  );

  clear(
    main,
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Fleet'), ' / ', s.name),
    h('h1', {}, s.name, ' ', statusBadge(s.status)),
    actions,
    h(
      'div',
      { class: 'grid' },
      h('section', { class: 'card', 'aria-labelledby': 'h-facts' }, h('h2', { id: 'h-facts' }, 'Facts'), facts),
      section('Client and tags', () => clientAndTags(s, again)),
      section('Pending updates', () => pending(id, st)),
    ),
    section('Plugins', (reload) => plugins(id, reload)),
    section('Themes', (reload) => themes(id, reload)),
    h(
      'div',
      { class: 'grid' },
      section('Security', () => security(id)),
      section('Costs', () => costs(id)),
    ),
    section('Changes', () => changes(id)),
  );
}

async function clientAndTags(s, again) {
  const [client, tags, clients] = await Promise.all([
    run('get-site-client-v1', { site_id_or_domain: s.id }),
    run('list-tags-v1', { per_page: 100 }),
    run('list-clients-v1', { per_page: 100 }),
  ]);
  if (!may('update-site-v1')) {
    return h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Client'),
      h('dd', {}, client.client ? client.client.name : '—'),
      h('dt', {}, 'Tags'),
      h('dd', {}, s.tags.length ? s.tags.map((t) => h('span', { class: 'tag' }, t.name)) : '—'),
    );
  }
  const current = new Set(s.tags.map((t) => t.id));
  const select = h(
    'select',
    { name: 'client' },
    h('option', { value: '' }, 'No client'),
    clients.items.map((c) => h('option', { value: c.id, selected: c.id === client.client?.id }, c.name)),
  );
  const boxes = tags.items.map((t) =>
    h('label', { class: 'check' }, h('input', { type: 'checkbox', value: t.id, checked: current.has(t.id) }), ' ', t.name),
  );
  return h(
    'form',
    {
      class: 'stack',
      onsubmit: async (ev) => {
        ev.preventDefault();
        const button = ev.target.querySelector('button');
        button.disabled = true;
        try {
          await run('update-site-v1', {
            site_id_or_domain: s.id,
            client_id: select.value ? Number(select.value) : null,
            tags: boxes
              .map((b) => b.querySelector('input'))
              .filter((i) => i.checked)
              .map((i) => Number(i.value)),
          });
          notice('Client and tags saved.');
          await again();
        } catch (e) {
          notice(e.message, 'error');
        } finally {
          button.disabled = false;
        }
      },
    },
    field('Client', select),
    h('fieldset', {}, h('legend', {}, 'Tags'), boxes.length ? boxes : h('p', { class: 'muted' }, 'No tags yet.')),
    h('button', { type: 'submit', class: 'btn' }, 'Save'),
  );
}

async function pending(id, st) {
  const [p, t] = await Promise.all([
    run('get-site-plugins-v1', { site_id_or_domain: id, has_update: true, per_page: 100 }),
    run('get-site-themes-v1', { site_id_or_domain: id, has_update: true, per_page: 100 }),
  ]);
  const items = [
    ...(st.wp_update_available ? [['WordPress', 'core', '', 'newer version']] : []),
    ...p.plugins.map((x) => [x.name, 'plugin', x.version, x.update_version]),
    ...t.themes.map((x) => [x.name, 'theme', x.version, x.update_version]),
  ];
  return table('Pending updates', ['Name', 'Type', 'Installed', 'Available'], items, 'Up to date.');
}

async function plugins(id, reload) {
  const r = await run('get-site-plugins-v1', { site_id_or_domain: id, per_page: 100 });
  const switchable = may('activate-site-plugins-v1');
  const toggle = (p) =>
    actionButton(
      p.active ? 'Deactivate' : 'Activate',
      async () => {
        const ability = p.active ? 'deactivate-site-plugins-v1' : 'activate-site-plugins-v1';
        const out = await run(ability, { site_id_or_domain: id, slugs: [p.slug] });
        if (out.errors?.length) notice(out.errors[0].message, 'error');
        else notice(`${p.name} ${p.active ? 'deactivated' : 'activated'}.`);
        await reload();
      },
      { class: 'btn-small', attrs: { 'aria-label': `${p.active ? 'Deactivate' : 'Activate'} ${p.name}` } },
    );
  return h(
    'div',
    {},
    h('p', { class: 'muted small' }, `${r.total} plugin(s), as of ${when(r.synced_at)}.`),
    table(
      'Plugins',
      ['Name', 'Version', 'State', 'Update', ...(switchable ? [''] : [])],
      r.plugins.map((p) => [
        h('span', {}, p.name, h('br'), h('span', { class: 'muted small' }, p.slug)),
        p.version,
        h('span', { class: p.active ? 'on' : 'off' }, p.active ? 'Active' : 'Inactive'),
        p.update_version ?? '—',
        ...(switchable ? [toggle(p)] : []),
      ]),
      'No plugins reported yet (sync the site).',
    ),
    r.total > r.plugins.length ? h('p', { class: 'muted small' }, `The first ${r.plugins.length} are shown.`) : '',
  );
}

async function themes(id, reload) {
  const r = await run('get-site-themes-v1', { site_id_or_domain: id, per_page: 100 });
  const switchable = may('activate-site-theme-v1');
  return table(
    'Themes',
    ['Name', 'Version', 'State', 'Update', ...(switchable ? [''] : [])],
    r.themes.map((t) => [
      t.name,
      t.version,
      h('span', { class: t.active ? 'on' : 'off' }, t.active ? 'Active' : 'Inactive'),
      t.update_version ?? '—',
      ...(switchable
        ? [
            t.active
              ? ''
              : actionButton(
                  'Activate',
                  async () => {
                    const out = await run('activate-site-theme-v1', { site_id_or_domain: id, slug: t.slug });
                    if (out.errors?.length) notice(out.errors[0].message, 'error');
                    else notice(`${t.name} activated.`);
                    await reload();
                  },
                  { class: 'btn-small', attrs: { 'aria-label': `Activate ${t.name}` } },
                ),
          ]
        : []),
    ]),
    'No themes reported yet (sync the site).',
  );
}

async function security(id) {
  const r = await run('get-site-security-v1', { site_id_or_domain: id });
  const ssl = r.ssl_status;
  return h(
    'div',
    {},
    h(
      'p',
      {},
      'TLS certificate: ',
      ssl.valid ? h('span', { class: 'on' }, `valid until ${when(ssl.expires)}`) : h('span', { class: 'off' }, ssl.error || 'not valid'),
    ),
    table(
      'Security issues',
      ['Severity', 'Issue'],
      r.security_issues.map((i) => [h('span', { class: `sev sev-${i.severity}` }, i.severity), i.message]),
      'No issue reported at the last sync.',
    ),
  );
}

async function costs(id) {
  const r = await run('get-site-costs-v1', { site_id_or_domain: id });
  return h(
    'div',
    {},
    table(
      'Costs',
      ['Name', 'Amount', 'Every', 'Share'],
      r.costs.map((c) => [c.name, c.amount.toFixed(2), c.frequency, c.monthly_equivalent.toFixed(2) + '/month']),
    ),
    h('p', {}, h('strong', {}, `${r.total_monthly.toFixed(2)} a month`), `, ${r.total_yearly.toFixed(2)} a year (active costs).`),
  );
}

async function changes(id) {
  const r = await run('get-site-changes-v1', { site_id_or_domain: id, per_page: 20 });
  return h(
    'div',
    {},
    table(
      'Changes',
      ['When', 'What', 'Who'],
      r.changes.map((c) => [when(c.timestamp), c.description || `${c.type} ${c.action}`, c.user || '—']),
      'No change made outside the dashboard.',
    ),
    r.total > r.changes.length ? h('p', { class: 'muted small' }, `The newest ${r.changes.length} of ${r.total}.`) : '',
  );
}
