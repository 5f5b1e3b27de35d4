// Clients: list and search, create, edit (name, e-mail, status), delete after the dry-run preview. Sites are
// assigned to a client on each site's page.
import { may, run } from '../api.js';
import { actionButton, clear, confirmDialog, field, h, notice, pager, table } from '../dom.js';

const PER_PAGE = 50;
const STATUSES = ['active', 'suspended', 'lead', 'lost'];

function clientForm(c, submitLabel, onSubmit) {
  const name = h('input', { name: 'name', required: true, value: c?.name ?? '', maxlength: 200 });
  const email = h('input', { name: 'email', type: 'email', value: c?.email ?? '' });
  const status = h(
    'select',
    { name: 'status' },
    STATUSES.map((s) => h('option', { value: s, selected: s === (c?.status ?? 'active') }, s)),
  );
  return h(
    'form',
    {
      class: 'filters',
      onsubmit: async (ev) => {
        ev.preventDefault();
        try {
          await onSubmit({ name: name.value.trim(), email: email.value.trim() || null, status: status.value });
        } catch (e) {
          notice(e.message, 'error');
        }
      },
    },
    field('Name', name),
    field('E-mail', email),
    field('Status', status),
    h('button', { type: 'submit', class: 'btn btn-primary' }, submitLabel),
  );
}

export async function render(main, _params, query) {
  const page = Math.max(1, Number(query.get('page')) || 1);
  const search = query.get('search') ?? '';
  const r = await run('list-clients-v1', { page, per_page: PER_PAGE, search });
  const again = () => render(main, _params, query);

  const rows = r.items.map((c) => {
    const nameCell = h('div', {}, h('strong', {}, c.name), h('br'), h('span', { class: 'muted small' }, c.email || 'no e-mail'));
    const buttons = h(
      'div',
      { class: 'actions' },
      may('update-client-v1')
        ? h(
            'button',
            {
              type: 'button',
              class: 'btn btn-small',
              'aria-label': `Edit ${c.name}`,
              onclick: () => {
                clear(
                  nameCell,
                  clientForm(c, 'Save', async (v) => {
                    await run('update-client-v1', { client_id_or_email: c.id, ...v });
                    notice('Client saved.');
                    await again();
                  }),
                );
                nameCell.querySelector('input').focus();
              },
            },
            'Edit',
          )
        : '',
      may('delete-client-v1')
        ? actionButton(
            'Delete…',
            async () => {
              const p = await run('delete-client-v1', { client_id_or_email: c.id, dry_run: true });
              const lines = [`${p.sites_unassigned} site(s) lose their client; ${p.costs_affected} cost(s) affected.`, ...p.warnings];
              if (!(await confirmDialog(`Delete client ${p.client_name}?`, lines, 'Delete client'))) return;
              await run('delete-client-v1', { client_id_or_email: c.id, confirm: true });
              notice(`Client ${p.client_name} deleted.`);
              await again();
            },
            { class: 'btn-small btn-danger', attrs: { 'aria-label': `Delete ${c.name}` } },
          )
        : '',
    );
    return [nameCell, c.status, h('a', { href: `#/?client=${c.id}` }, `${c.sites_count} site(s)`), buttons];
  });

  const searchInput = h('input', { type: 'search', name: 'search', value: search });
  clear(
    main,
    h('h1', {}, 'Clients'),
    may('add-client-v1')
      ? h(
          'section',
          { class: 'card', 'aria-labelledby': 'h-new-client' },
          h('h2', { id: 'h-new-client' }, 'New client'),
          clientForm(null, 'Create', async (v) => {
            const c = await run('add-client-v1', v.email ? v : { name: v.name, status: v.status });
            notice(`Client ${c.name} created.`);
            await again();
          }),
        )
      : '',
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'h-clients' },
      h('h2', { id: 'h-clients' }, 'All clients'),
      h(
        'form',
        {
          class: 'filters',
          role: 'search',
          onsubmit: (ev) => {
            ev.preventDefault();
            location.hash = `#/clients?search=${encodeURIComponent(searchInput.value.trim())}`;
          },
        },
        field('Search', searchInput),
        h('button', { type: 'submit', class: 'btn' }, 'Search'),
      ),
      table('Clients', ['Client', 'Status', 'Sites', ''], rows, 'No clients yet.'),
      pager(page, PER_PAGE, r.total, 'clients', (p) => `#/clients?page=${p}&search=${encodeURIComponent(search)}`),
    ),
  );
}
