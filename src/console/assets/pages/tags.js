// Tags (site groups): list, create, rename and recolour, delete after the dry-run preview. Sites are assigned to
// tags on each site's page.
import { may, run } from '../api.js';
import { actionButton, clear, confirmDialog, field, h, notice, pager, table } from '../dom.js';

const PER_PAGE = 50;

export async function render(main, _params, query) {
  const page = Math.max(1, Number(query.get('page')) || 1);
  const r = await run('list-tags-v1', { page, per_page: PER_PAGE });
  const again = () => render(main, _params, query);
  const canEdit = may('update-tag-v1');

  const editForm = (t, cell) => {
    const name = h('input', { name: 'name', value: t.name, required: true, maxlength: 100 });
    const color = h('input', { name: 'color', type: 'color', value: t.color ?? '#777777' });
    clear(
      cell,
      h(
        'form',
        {
          class: 'inline',
          onsubmit: async (ev) => {
            ev.preventDefault();
            try {
              await run('update-tag-v1', { tag_id: t.id, name: name.value.trim(), color: color.value });
              notice('Tag saved.');
              await again();
            } catch (e) {
              notice(e.message, 'error');
            }
          },
        },
        field('Name', name),
        field('Colour', color),
        h('button', { type: 'submit', class: 'btn btn-small' }, 'Save'),
        h('button', { type: 'button', class: 'btn btn-small', onclick: () => again() }, 'Cancel'),
      ),
    );
    name.focus();
  };

  const rows = r.items.map((t) => {
    const swatch = h('span', { class: 'swatch', 'aria-hidden': 'true' });
    // Through the CSSOM: the page's content security policy refuses style attributes.
    swatch.style.backgroundColor = /^#[0-9a-f]{6}$/i.test(t.color ?? '') ? t.color : '#777777';
    const nameCell = h('div', {}, swatch, ' ', t.name);
    const buttons = h(
      'div',
      { class: 'actions' },
      canEdit
        ? h(
            'button',
            { type: 'button', class: 'btn btn-small', 'aria-label': `Edit ${t.name}`, onclick: () => editForm(t, nameCell) },
            'Edit',
          )
        : '',
      may('delete-tag-v1')
        ? actionButton(
            'Delete…',
            async () => {
              const p = await run('delete-tag-v1', { tag_id: t.id, dry_run: true });
              const lines = [`${p.sites_affected} site(s) lose this tag.`, ...p.warnings];
              if (!(await confirmDialog(`Delete tag ${p.tag_name}?`, lines, 'Delete tag'))) return;
              await run('delete-tag-v1', { tag_id: t.id, confirm: true });
              notice(`Tag ${p.tag_name} deleted.`);
              await again();
            },
            { class: 'btn-small btn-danger', attrs: { 'aria-label': `Delete ${t.name}` } },
          )
        : '',
    );
    return [nameCell, h('a', { href: `#/?tag=${t.id}` }, `${t.sites_count} site(s)`), buttons];
  });

  let create = '';
  if (may('add-tag-v1')) {
    const name = h('input', { name: 'name', required: true, maxlength: 100 });
    const color = h('input', { name: 'color', type: 'color', value: '#2185d0' });
    create = h(
      'section',
      { class: 'card', 'aria-labelledby': 'h-new-tag' },
      h('h2', { id: 'h-new-tag' }, 'New tag'),
      h(
        'form',
        {
          class: 'filters',
          onsubmit: async (ev) => {
            ev.preventDefault();
            try {
              const t = await run('add-tag-v1', { name: name.value.trim(), color: color.value });
              notice(`Tag ${t.name} created.`);
              await again();
            } catch (e) {
              notice(e.message, 'error');
            }
          },
        },
        field('Name', name),
        field('Colour', color),
        h('button', { type: 'submit', class: 'btn btn-primary' }, 'Create'),
      ),
    );
  }

  clear(
    main,
    h('h1', {}, 'Tags'),
    create,
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'h-tags' },
      h('h2', { id: 'h-tags' }, 'All tags'),
      table('Tags', ['Tag', 'Sites', ''], rows, 'No tags yet.'),
      pager(page, PER_PAGE, r.total, 'tags', (p) => `#/tags?page=${p}`),
    ),
  );
}
