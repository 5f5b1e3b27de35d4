// The audit log (administrators): entries newest first, filtered by who, action and outcome, paged. The filters live
// in the address (#/audit?who=…&action=…&outcome=…&page=N), so a filtered view can be shared and reloaded.
import { run } from '../api.js';
import { clear, field, h, table, when } from '../dom.js';

const PER_PAGE = 50;

export async function render(main, _params, query) {
  const f = { who: query.get('who') ?? '', action: query.get('action') ?? '', outcome: query.get('outcome') ?? '' };
  const page = Math.max(1, Number(query.get('page')) || 1);
  const input = { page, per_page: PER_PAGE, ...Object.fromEntries(Object.entries(f).filter(([, v]) => v)) };
  const r = await run('list-audit-log-v1', input);
  const go = (next) => {
    const q = new URLSearchParams(Object.entries(next).filter(([, v]) => v !== '' && v !== 1));
    location.hash = `#/audit${q.toString() ? `?${q}` : ''}`;
  };
  const inputs = {
    who: h('input', { name: 'who', value: f.who, placeholder: 'name, user:ID or key:ID' }),
    action: h('input', { name: 'action', value: f.action, placeholder: 'add-tag-v1, login-failed…' }),
    outcome: h('input', { name: 'outcome', value: f.outcome, placeholder: 'ok, error or a code' }),
  };
  const summary = (v) => (v === null || v === undefined ? '' : JSON.stringify(v));
  const rows = r.items.map((e) => [
    String(e.id),
    when(e.at),
    `${e.who_name} (${e.who_kind}${e.who_id === null ? '' : ` ${e.who_id}`})`,
    e.door,
    e.address ?? '',
    e.action,
    h('code', { class: 'small' }, summary(e.input)),
    e.outcome,
  ]);
  const pages = Math.max(1, Math.ceil(r.total / PER_PAGE));
  clear(
    main,
    h('h1', {}, 'Audit log'),
    h('p', { class: 'muted' }, 'Every change through any door, logins and failed logins, newest first. Secrets are never recorded.'),
    h(
      'form',
      {
        class: 'filters',
        onsubmit: (ev) => {
          ev.preventDefault();
          go({ who: inputs.who.value.trim(), action: inputs.action.value.trim(), outcome: inputs.outcome.value.trim() });
        },
      },
      field('Who', inputs.who),
      field('Action', inputs.action),
      field('Outcome', inputs.outcome),
      h('button', { type: 'submit', class: 'btn' }, 'Filter'),
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'h-entries' },
      h('h2', { id: 'h-entries' }, `${r.total} entries`),
      table('Audit log', ['#', 'When', 'Who', 'Door', 'Address', 'Action', 'Input', 'Outcome'], rows, 'No entries.'),
      h(
        'p',
        { class: 'pager' },
        page > 1 ? h('button', { type: 'button', class: 'btn btn-small', onclick: () => go({ ...f, page: page - 1 }) }, 'Newer') : '',
        ` Page ${page} of ${pages} `,
        page < pages ? h('button', { type: 'button', class: 'btn btn-small', onclick: () => go({ ...f, page: page + 1 }) }, 'Older') : '',
      ),
    ),
  );
}
