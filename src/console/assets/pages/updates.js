// Updates across the fleet: shown only when the registry has list-updates-v1 (issue 15's abilities). Lists the
// pending items (list-updates-v1, paged on the server), lets a person pick some, shows what run-updates-v1 would do
// (its dry run when it has one, else the picked list) and applies them after confirmation.
import { may, run, takes } from '../api.js';
import { actionButton, clear, confirmDialog, h, notice, pager, table } from '../dom.js';

const PER_PAGE = 50;

export async function render(main, _params, query) {
  const page = Math.max(1, Number(query.get('page')) || 1);
  const r = await run('list-updates-v1', { page, per_page: PER_PAGE });
  const canRun = may('run-updates-v1');
  const picked = new Map();
  const key = (u) => `${u.site_id}|${u.type}|${u.slug}`;
  const rows = (r.updates ?? []).map((u) => [
    ...(canRun ? [h('input', { type: 'checkbox', 'aria-label': `Select ${u.name ?? u.slug} on ${u.site_name ?? u.site_url}`,
      onchange: (ev) => { if (ev.target.checked) picked.set(key(u), u); else picked.delete(key(u)); } })] : []),
    h('a', { href: `#/sites/${u.site_id}` }, u.site_name ?? u.site_url), u.type, u.name ?? u.slug,
    u.version ?? u.current_version ?? '—', u.new_version ?? u.update_version ?? '—',
  ]);

  const apply = async () => {
    if (!picked.size) return notice('Select updates first.', 'error');
    const items = [...picked.values()];
    const input = {
      site_ids_or_domains: [...new Set(items.map((u) => u.site_id))],
      types: [...new Set(items.map((u) => (u.type.endsWith('s') || u.type === 'core' ? u.type : `${u.type}s`)))],
      specific_items: [...new Set(items.map((u) => u.slug))],
    };
    let lines = items.map((u) => `${u.name ?? u.slug} on ${u.site_name ?? u.site_url}: ${u.version ?? u.current_version ?? '?'} → ${u.new_version ?? u.update_version ?? '?'}`);
    if (takes('run-updates-v1', 'dry_run')) {
      const preview = await run('run-updates-v1', { ...input, dry_run: true });
      lines = [JSON.stringify(preview.summary ?? preview)].concat(lines);
    }
    if (!await confirmDialog(`Apply ${items.length} update(s)?`, lines.slice(0, 50), 'Apply updates')) return;
    const out = await run('run-updates-v1', takes('run-updates-v1', 'confirm') ? { ...input, confirm: true } : input);
    if (out.queued) { location.hash = `#/jobs/${out.job_id}`; return; }
    notice(`Updated ${out.summary?.total_updated ?? 0}; ${out.summary?.total_errors ?? 0} failed.`, out.summary?.total_errors ? 'error' : 'ok');
    await render(main, _params, query);
  };

  const s = r.summary ?? {};
  clear(main, h('h1', {}, 'Updates'),
    h('p', {}, `${s.total ?? r.total ?? 0} pending: ${s.core ?? 0} core, ${s.plugins ?? 0} plugins, ${s.themes ?? 0} themes, ${s.translations ?? 0} translations.`),
    canRun ? h('div', { class: 'actions' }, actionButton('Preview and apply…', apply, { class: 'btn-primary' })) : '',
    h('section', { class: 'card', 'aria-labelledby': 'h-updates' }, h('h2', { id: 'h-updates' }, 'Pending updates'),
      table('Pending updates', [...(canRun ? [h('span', { class: 'sr-only' }, 'Select')] : []), 'Site', 'Type', 'Item', 'Installed', 'Available'], rows, 'Everything is up to date.'),
      pager(page, PER_PAGE, r.total ?? 0, 'updates', (p) => `#/updates?page=${p}`)));
}
