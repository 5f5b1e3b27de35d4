// Update policies and the update history: each policy with its window, latest run and pause state (preview, pause or
// resume, delete after the dry run), a form to add one, and the latest update attempts with their outcomes.
import { may, run } from '../api.js';
import { actionButton, confirmDialog, field, h, notice, pager, section, table, when } from '../dom.js';

const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
const PER_PAGE = 50;
const OUTCOMES = ['updated', 'failed', 'skipped', 'rolled_back', 'rollback_failed'];

const targetsText = (t) =>
  t.all
    ? 'all sites'
    : [
        t.sites.length && `${t.sites.length} site(s)`,
        t.tags.length && `tags ${t.tags.join(', ')}`,
        t.clients.length && `clients ${t.clients.join(', ')}`,
      ]
        .filter(Boolean)
        .join('; ');
const whatText = (u) =>
  [u.core !== 'none' && `core (${u.core})`, u.plugins && 'plugins', u.themes && 'themes', u.translations && 'translations']
    .filter(Boolean)
    .join(', ') +
  (u.slugs_mode === 'all' ? '' : ` — ${u.slugs_mode} ${u.slugs.join(', ')}`) +
  (u.security_only ? ' — security fixes only' : '');

function policyRows(items, reload) {
  return items.map((p) => {
    const r = p.last_run;
    const state = p.paused
      ? h('span', { class: 'badge badge-error', title: p.paused_reason }, 'paused')
      : h('span', { class: 'badge badge-ok' }, 'active');
    const buttons = h(
      'div',
      { class: 'actions' },
      actionButton(
        'Preview',
        async () => {
          const v = await run('preview-update-policy-v1', { policy_id: p.id });
          const w = v.next_window;
          const lines = w
            ? [
                `${w.open_now ? 'Open now' : `Opens ${when(w.starts_at)}`}, until ${when(w.ends_at)}, on ${w.sites.length} site(s).`,
                `Would update ${w.would_update_total} item(s)${v.security_only ? ' (security fixes only)' : ''}; ${w.waiting_total} wait for the delay.`,
                ...w.would_update
                  .slice(0, 20)
                  .map(
                    (i) =>
                      `${i.site_url}: ${i.name} ${i.current_version ?? ''} → ${i.new_version}${i.fixes ? ` (fixes ${i.fixes.join(', ')})` : ''}`,
                  ),
              ]
            : ['No target site has a window in the coming week.'];
          await confirmDialog(`Next window of ${p.name}`, lines, 'Close');
        },
        { class: 'btn-small', attrs: { 'aria-label': `Preview ${p.name}` } },
      ),
      may('update-update-policy-v1')
        ? actionButton(
            p.paused ? 'Resume' : 'Pause',
            async () => {
              await run('update-update-policy-v1', { policy_id: p.id, paused: !p.paused });
              notice(`Policy ${p.name} ${p.paused ? 'resumed' : 'paused'}.`);
              await reload();
            },
            { class: 'btn-small', attrs: { 'aria-label': `${p.paused ? 'Resume' : 'Pause'} ${p.name}` } },
          )
        : '',
      may('delete-update-policy-v1')
        ? actionButton(
            'Delete…',
            async () => {
              await run('delete-update-policy-v1', { policy_id: p.id, dry_run: true });
              if (!(await confirmDialog(`Delete policy ${p.name}?`, ['A run in progress stops; the history stays.'], 'Delete policy')))
                return;
              await run('delete-update-policy-v1', { policy_id: p.id, confirm: true });
              notice(`Policy ${p.name} deleted.`);
              await reload();
            },
            { class: 'btn-small btn-danger', attrs: { 'aria-label': `Delete ${p.name}` } },
          )
        : '',
    );
    return [
      p.name,
      `${p.window.days.join(', ')} ${p.window.start}–${p.window.end} (site time)`,
      targetsText(p.targets),
      whatText(p.updates),
      h(
        'div',
        {},
        state,
        r ? ` last run ${when(r.window_start)}: ${r.status}, ${r.processed}/${r.sites} site(s), ${r.failures} failure(s)` : '',
      ),
      buttons,
    ];
  });
}

function addForm(reload) {
  const name = h('input', { name: 'name', required: true, maxlength: 100 });
  const all = h('input', { name: 'all_sites', type: 'checkbox', checked: true });
  const tags = h('input', { name: 'tags', placeholder: 'tag ids, e.g. 1, 4' });
  const days = DAYS.map((d) => h('input', { name: `day-${d}`, type: 'checkbox', checked: d !== 'sat' && d !== 'sun', value: d }));
  const start = h('input', { name: 'start', type: 'time', value: '02:00', required: true });
  const end = h('input', { name: 'end', type: 'time', value: '05:00', required: true });
  const core = h(
    'select',
    { name: 'core' },
    ['none', 'minor', 'major'].map((c) => h('option', { value: c, selected: c === 'minor' }, c)),
  );
  const kinds = ['plugins', 'themes', 'translations'].map((k) => h('input', { name: k, type: 'checkbox', checked: true }));
  const security = h('input', { name: 'security_only', type: 'checkbox' });
  const delay = h('input', { name: 'delay_days', type: 'number', min: 0, max: 365, value: 0 });
  const stop = h('input', { name: 'stop_after', type: 'number', min: 1, max: 1000, value: 3 });
  return h(
    'form',
    {
      class: 'stack',
      'aria-label': 'Add an update policy',
      onsubmit: async (ev) => {
        ev.preventDefault();
        const tagIds = tags.value
          .split(',')
          .map((t) => Number(t.trim()))
          .filter((n) => Number.isInteger(n) && n > 0);
        try {
          await run('add-update-policy-v1', {
            name: name.value.trim(),
            all_sites: all.checked,
            tags: tagIds,
            days: days.filter((d) => d.checked).map((d) => d.value),
            start: start.value,
            end: end.value,
            core: core.value,
            plugins: kinds[0].checked,
            themes: kinds[1].checked,
            translations: kinds[2].checked,
            security_only: security.checked,
            delay_days: Number(delay.value),
            stop_after: Number(stop.value),
          });
          notice('Update policy created.');
          await reload();
        } catch (e) {
          notice(e.message, 'error');
        }
      },
    },
    field('Name', name),
    field('All sites', all),
    field('Tags', tags),
    h(
      'fieldset',
      {},
      h('legend', {}, 'Days'),
      DAYS.map((d, i) => field(d, days[i])),
    ),
    field('From (site time)', start),
    field('To (site time)', end),
    field('Core', core),
    ...kinds.map((k, i) => field(['Plugins', 'Themes', 'Translations'][i], k)),
    field('Security fixes only', security),
    field('Delay (days pending)', delay),
    field('Pause after failures', stop),
    h('button', { type: 'submit', class: 'btn' }, 'Add policy'),
  );
}

export async function render(main, _params, query) {
  const page = Math.max(1, Number(query.get('page')) || 1);
  const outcome = OUTCOMES.includes(query.get('outcome')) ? query.get('outcome') : '';
  main.append(
    h('h1', {}, 'Update policies'),
    h('p', { class: 'muted' }, 'Unattended updates in safe mode, in each site’s own maintenance window.'),
    section('Policies', async (reload) => {
      const r = await run('list-update-policies-v1', {});
      return h(
        'div',
        {},
        table('Update policies', ['Name', 'Window', 'Sites', 'Updates', 'State', ''], policyRows(r.items, reload), 'No policies yet.'),
        may('add-update-policy-v1') ? h('details', {}, h('summary', {}, 'Add a policy'), addForm(reload)) : '',
      );
    }),
    section('Update history', async () => {
      const r = await run('list-update-history-v1', { page, per_page: PER_PAGE, ...(outcome ? { outcomes: [outcome] } : {}) });
      const filter = h(
        'nav',
        { class: 'filters', 'aria-label': 'Outcome' },
        ['', ...OUTCOMES].map((o) =>
          h('a', { href: `#/policies${o ? `?outcome=${o}` : ''}`, 'aria-current': o === outcome ? 'page' : false }, o || 'all'),
        ),
      );
      const rows = r.entries.map((e) => [
        when(e.at),
        e.site_url,
        `${e.name} ${e.from ?? ''} → ${e.to ?? ''}`,
        h('span', { class: `badge badge-${e.outcome === 'updated' ? 'ok' : 'error'}` }, e.outcome),
        e.reason,
        e.actor.kind === 'policy' ? `policy ${e.actor.name}` : e.actor.name,
      ]);
      return h(
        'div',
        {},
        filter,
        table('Update history', ['When', 'Site', 'Item', 'Outcome', 'Why', 'By'], rows, 'No update attempts recorded.'),
        pager(page, PER_PAGE, r.total, 'attempts', (p) => `#/policies?page=${p}${outcome ? `&outcome=${outcome}` : ''}`),
      );
    }),
  );
}
