// Install a plugin or theme on many sites: search the directory (search-*-directory-v1), pick a slug (and a version)
// or give a zip URL, choose the sites (ids or domains, tags), preview (dry run), confirm, then the per-site results
// (install-*-v1), or a link to the job when the run went to the background.
import { may, run } from '../api.js';
import { clear, confirmDialog, errorText, field, h, notice, table } from '../dom.js';

const list = (v) =>
  v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)
    .map((x) => (/^\d+$/.test(x) ? Number(x) : x));

export async function render(main) {
  const tags = (await run('list-tags-v1', { page: 1, per_page: 100 })).items;
  const type = h('select', { name: 'type' }, h('option', { value: 'plugin' }, 'Plugin'), h('option', { value: 'theme' }, 'Theme'));
  const search = h('input', { name: 'search', type: 'search', maxlength: 200 });
  const found = h('div', { 'aria-live': 'polite' });
  const slug = h('input', { name: 'slug', maxlength: 200 });
  const version = h('input', { name: 'version', maxlength: 50, placeholder: 'stable' });
  const url = h('input', { name: 'url', type: 'url', maxlength: 2048 });
  const sites = h('input', { name: 'sites', placeholder: '12, shop.example.com' });
  const tagSelect = h(
    'select',
    { name: 'tags', multiple: true, size: Math.min(6, Math.max(2, tags.length)) },
    tags.map((t) => h('option', { value: String(t.id) }, t.name)),
  );
  const activate = h('input', { name: 'activate', type: 'checkbox' });
  const overwrite = h('input', { name: 'overwrite', type: 'checkbox' });
  const out = h('div', { 'aria-live': 'polite' });
  const ability = () => (type.value === 'plugin' ? 'install-plugins-v1' : 'install-themes-v1');
  const canInstall = may('install-plugins-v1');

  const doSearch = async (ev) => {
    ev.preventDefault();
    try {
      const r = await run(`search-${type.value}-directory-v1`, { search: search.value.trim(), per_page: 10 });
      const rows = r.items.map((i) => [
        i.name,
        i.slug,
        i.version,
        h('button', { type: 'button', class: 'btn btn-small', 'aria-label': `Use ${i.slug}`, onclick: () => (slug.value = i.slug) }, 'Use'),
      ]);
      clear(found, table(`Directory: ${r.total} found`, ['Name', 'Slug', 'Version', ''], rows, 'Nothing found.'));
    } catch (e) {
      clear(found, errorText(e));
    }
  };

  const input = () => {
    const i = {};
    const ids = list(sites.value);
    if (ids.length) i.site_ids_or_domains = ids;
    const t = [...tagSelect.selectedOptions].map((o) => Number(o.value));
    if (t.length) i.tags = t;
    if (url.value.trim()) i.url = url.value.trim();
    else {
      i.slug = slug.value.trim();
      if (version.value.trim()) i.version = version.value.trim();
    }
    if (type.value === 'plugin' && activate.checked) i.activate = true;
    if (overwrite.checked) i.overwrite = true;
    return i;
  };

  const results = (r) => {
    const rows = [
      ...r.installed.map((x) => [x.site_name || x.site_url, 'Installed', `${x.slug} ${x.version}${x.activated ? ' (active)' : ''}`]),
      ...r.errors.map((x) => [x.site_name || x.site_url || '—', 'Failed', x.message]),
      ...r.skipped.map((x) => [x.site_name || x.site_url, 'Skipped', x.message]),
    ];
    const s = r.summary;
    return h(
      'div',
      {},
      h('p', {}, `${s.installed} installed, ${s.failed} failed, ${s.skipped} skipped.`),
      table('Per site', ['Site', 'Result', 'Details'], rows, 'No site.'),
    );
  };

  const install = async (ev) => {
    ev.preventDefault();
    const button = ev.submitter ?? ev.target.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      const preview = await run(ability(), { ...input(), dry_run: true });
      const name = preview.package.name ?? preview.package.slug ?? preview.package.download_url;
      const version_ = preview.package.version ? ` ${preview.package.version}` : '';
      const lines = [
        ...preview.would_install.map(
          (w) => `${w.site_name || w.site_url}: ${w.action}${w.installed_version ? ` (has ${w.installed_version})` : ''}`,
        ),
        ...preview.skipped.map((x) => `${x.site_name || x.site_url}: skipped, ${x.message}`),
      ];
      if (!preview.sites_to_install) {
        clear(out, results(preview));
        notice('Nothing to install.', 'error');
        return;
      }
      if (!(await confirmDialog(`Install ${name}${version_} on ${preview.sites_to_install} site(s)?`, lines, 'Install'))) return;
      const r = await run(ability(), { ...input(), confirm: true });
      if (r.queued) {
        clear(out, h('p', {}, 'Running in the background: ', h('a', { href: `#/jobs/${r.job_id}` }, 'follow the job')));
        return;
      }
      clear(out, results(r));
      notice(`${r.summary.installed} site(s) installed.`, r.summary.failed ? 'error' : 'ok');
    } catch (e) {
      clear(out, errorText(e));
    } finally {
      button.disabled = false;
    }
  };

  clear(
    main,
    h('h1', {}, 'Install'),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'h-dir' },
      h('h2', { id: 'h-dir' }, 'Find in the directory'),
      h(
        'form',
        { class: 'filters', onsubmit: doSearch },
        field('Type', type),
        field('Search', search),
        h('button', { type: 'submit', class: 'btn' }, 'Search'),
      ),
      found,
    ),
    canInstall
      ? h(
          'section',
          { class: 'card', 'aria-labelledby': 'h-install' },
          h('h2', { id: 'h-install' }, 'Install on sites'),
          h(
            'form',
            { class: 'filters', onsubmit: install },
            field('Slug', slug),
            field('Version', version),
            field('Or zip URL', url),
            field('Sites (IDs or domains)', sites),
            tags.length ? field('Tags', tagSelect) : '',
            field('Activate (plugins)', activate),
            field('Overwrite an installed copy', overwrite),
            h('button', { type: 'submit', class: 'btn btn-primary' }, 'Preview and install…'),
          ),
          out,
        )
      : h('p', { class: 'muted' }, 'Your role can search the directory but not install.'),
  );
}
