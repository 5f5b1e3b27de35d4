// Known vulnerabilities fleet-wide (list-vulnerabilities-v1): each record with its ids, affected ranges, fixed-in,
// severity, sites and pending fixes, its references and the feed's attribution (its licence requires it wherever the
// record is shown); the feed's status; and the one-call fix (fix-vulnerabilities-v1, safe mode) for those who may run
// it. Filters live in the address (#/vulnerabilities?severity=high&site=…&slug=…&fixable=1&page=N).
import { may, run } from '../api.js';
import { actionButton, clear, confirmDialog, field, h, notice, pager, table, when } from '../dom.js';

const PER_PAGE = 20;
const SEVERITIES = ['none', 'low', 'medium', 'high', 'critical'];

const sevClass = (s) => (s === 'critical' || s === 'high' ? 'high' : s === 'medium' ? 'medium' : 'low');
const ext = (href, text) => h('a', { href, target: '_blank', rel: 'noopener noreferrer' }, text ?? href);
const isUrl = (v) => typeof v === 'string' && /^https?:\/\//i.test(v);

/** The feed's copyright block, verbatim: every string as text (web addresses as links), nested blocks as lists. */
function copyrights(v) {
  if (v === null || typeof v !== 'object') return isUrl(v) ? ext(v) : String(v);
  return h(
    'ul',
    { class: 'plain small' },
    Object.entries(v).map(([k, x]) => h('li', {}, h('span', { class: 'muted' }, `${k}: `), copyrights(x))),
  );
}

function attribution(a) {
  return h(
    'div',
    { class: 'attribution small' },
    h('p', {}, `Source: ${a.feed}. ${a.terms}`, a.record_url ? [' ', ext(a.record_url, 'Record at the source')] : ''),
    Object.keys(a.copyrights ?? {}).length ? copyrights(a.copyrights) : '',
  );
}

function record(r) {
  const ranges = r.affected.map((a) => `${a.type} ${a.slug}: ${a.versions.join(', ')}`);
  const fixed = [...new Set(r.installs.map((i) => i.fixed_in).filter(Boolean))];
  const fixedIn = fixed.length ? fixed.join(', ') : r.affected.flatMap((a) => a.fixed_versions).join(', ') || 'no fix known';
  return h(
    'article',
    { class: 'card vuln', 'aria-labelledby': `v-${r.key}`, dataset: { key: r.key } },
    h('h3', { id: `v-${r.key}` }, r.title),
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'ID'),
      h('dd', {}, h('code', {}, r.id)),
      h('dt', {}, 'CVE'),
      h('dd', {}, r.cve ? (r.cve_link ? ext(r.cve_link, r.cve) : r.cve) : 'none'),
      h('dt', {}, 'Severity'),
      h(
        'dd',
        {},
        h('span', { class: `sev sev-${sevClass(r.severity)}` }, r.severity ?? 'unscored'),
        r.cvss ? ` CVSS ${r.cvss.score}${r.cvss.vector ? ` (${r.cvss.vector})` : ''}` : '',
      ),
      h('dt', {}, 'Affected'),
      h('dd', {}, ranges.join('; ')),
      h('dt', {}, 'Fixed in'),
      h('dd', {}, fixedIn),
      h('dt', {}, 'Sites affected'),
      h('dd', {}, `${r.sites_affected} (${r.installs_total} install(s))`),
      h('dt', {}, 'Updates pending'),
      h('dd', {}, r.updates_pending ? `${r.updates_pending} install(s) offer an update that fixes it` : 'none'),
    ),
    r.installs.length
      ? table(
          `Installs of ${r.title}`,
          ['Site', 'Item', 'Version', 'Fixed in', 'Offered update'],
          r.installs.map((i) => [
            h('a', { href: `#/sites/${i.site_id}` }, i.site_name),
            i.name,
            i.version,
            i.fixed_in ?? 'no fix known',
            i.update_version ? `${i.update_version}${i.update_pending ? ' (fixes it)' : ' (does not fix it)'}` : 'none',
          ]),
        )
      : '',
    r.references.length
      ? h(
          'details',
          {},
          h('summary', {}, `References (${r.references.length})`),
          h(
            'ul',
            { class: 'plain small' },
            r.references.map((u) => h('li', {}, isUrl(u) ? ext(u) : u)),
          ),
        )
      : '',
    attribution(r.attribution),
  );
}

function feedStatus(f) {
  if (!f.source)
    return h(
      'p',
      { class: 'muted' },
      'No vulnerability feed loaded (settings: vulnerability_source, or `sitefleet vulnerabilities import`).',
    );
  return h(
    'dl',
    { class: 'facts' },
    h('dt', {}, 'Source'),
    h('dd', {}, f.source, f.origin ? h('span', { class: 'muted small' }, ` (${f.origin})`) : ''),
    h('dt', {}, 'Records'),
    h('dd', {}, `${f.records.toLocaleString()}${f.skipped ? ` (${f.skipped} skipped)` : ''}`),
    h('dt', {}, 'Imported'),
    h('dd', {}, when(f.imported_at)),
    h('dt', {}, 'Last checked'),
    h('dd', {}, when(f.checked_at)),
    f.last_error ? [h('dt', {}, 'Last error'), h('dd', { class: 'error' }, f.last_error)] : '',
  );
}

function fixResults(r) {
  const list = (xs, text) =>
    xs?.length
      ? h(
          'ul',
          { class: 'plain small' },
          xs.map((x) => h('li', {}, text(x))),
        )
      : 'none';
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'h-fix-results' },
    h('h2', { id: 'h-fix-results' }, 'Fix results'),
    h(
      'p',
      {},
      `${r.summary.sites} site(s): ${r.summary.updated} updated, ${r.summary.errors} error(s), ${r.summary.not_fixable} not fixable by an update.`,
    ),
    table(
      'Fix results per site',
      ['Site', 'Updated', 'Rolled back', 'Errors', 'Skipped', 'Not fixable'],
      r.sites.map((s) => [
        h('a', { href: `#/sites/${s.site_id}` }, s.site_name),
        list(s.updated, (u) => `${u.name} ${u.old_version ?? ''} → ${u.new_version}`),
        list(s.rolled_back, (u) => `${u.name} ${u.to_version}: ${u.reason}`),
        list(s.errors, (e) => `${e.slug}: ${e.message} (${e.code})`),
        list(s.skipped, (e) => `${e.slug}: ${e.message}`),
        list(s.not_fixable, (n) => `${n.slug} ${n.version}: ${n.reason}${n.fixed_in ? ` (fixed in ${n.fixed_in})` : ''}`),
      ]),
      'No site has a vulnerable install.',
    ),
  );
}

export async function render(main, _params, query) {
  const f = {
    severity: SEVERITIES.includes(query.get('severity')) ? query.get('severity') : '',
    site: query.get('site') ?? '',
    slug: query.get('slug') ?? '',
    fixable: ['1', '0'].includes(query.get('fixable')) ? query.get('fixable') : '',
  };
  const page = Math.max(1, Number(query.get('page')) || 1);
  const input = { page, per_page: PER_PAGE };
  if (f.severity) input.severity = f.severity;
  if (f.site) input.site = /^\d+$/.test(f.site) ? Number(f.site) : f.site;
  if (f.slug) input.slug = f.slug;
  if (f.fixable) input.fixable = f.fixable === '1';
  const r = await run('list-vulnerabilities-v1', input);
  const href = (next) => {
    const q = new URLSearchParams(Object.entries(next).filter(([k, v]) => v !== '' && !(k === 'page' && v === 1)));
    return `#/vulnerabilities${q.toString() ? `?${q}` : ''}`;
  };
  const inputs = {
    severity: h(
      'select',
      { name: 'severity' },
      h('option', { value: '' }, 'any'),
      SEVERITIES.map((s) => h('option', { value: s, selected: s === f.severity }, `${s} or worse`)),
    ),
    site: h('input', { name: 'site', value: f.site, placeholder: 'site id or domain' }),
    slug: h('input', { name: 'slug', value: f.slug, placeholder: 'akismet, akismet/akismet.php' }),
    fixable: h(
      'select',
      { name: 'fixable' },
      h('option', { value: '' }, 'any'),
      h('option', { value: '1', selected: f.fixable === '1' }, 'a fix exists'),
      h('option', { value: '0', selected: f.fixable === '0' }, 'no fix known'),
    ),
  };
  const results = h('div', { 'aria-live': 'polite' });
  const fix = may('fix-vulnerabilities-v1')
    ? actionButton(
        'Fix vulnerabilities',
        async () => {
          const preview = await run('fix-vulnerabilities-v1', { dry_run: true });
          const lines = [
            `Safe mode: each site is checked first, items are updated one at a time and an update that breaks the site is rolled back.`,
            `${preview.summary.planned} update(s) on ${preview.sites.filter((s) => s.planned.length).length} site(s); ${preview.summary.not_fixable} install(s) have no update that fixes them.`,
            ...preview.sites
              .flatMap((s) => s.planned.slice(0, 10).map((p) => `${s.site_name}: ${p.item} ${p.version} → ${p.to}`))
              .slice(0, 20),
          ];
          if (!(await confirmDialog('Fix vulnerabilities on every affected site?', lines, 'Update sites'))) return;
          const done = await run('fix-vulnerabilities-v1', { confirm: true, safe: true });
          clear(results, fixResults(done));
          notice(`Fix done: ${done.summary.updated} updated, ${done.summary.errors} error(s).`, done.summary.errors ? 'error' : 'ok');
        },
        { class: 'btn-danger' },
      )
    : '';
  clear(
    main,
    h('div', { class: 'page-head' }, h('h1', {}, 'Vulnerabilities'), fix),
    h('p', { class: 'muted' }, 'Installed core, plugin and theme versions that a vulnerability feed lists as affected, most severe first.'),
    h('section', { class: 'card', 'aria-labelledby': 'h-feed' }, h('h2', { id: 'h-feed' }, 'Feed'), feedStatus(r.feed)),
    results,
    h(
      'form',
      {
        class: 'filters',
        onsubmit: (ev) => {
          ev.preventDefault();
          location.hash = href({
            severity: inputs.severity.value,
            site: inputs.site.value.trim(),
            slug: inputs.slug.value.trim(),
            fixable: inputs.fixable.value,
            page: 1,
          });
        },
      },
      field('Severity', inputs.severity),
      field('Site', inputs.site),
      field('Slug', inputs.slug),
      field('Fixable', inputs.fixable),
      h('button', { type: 'submit', class: 'btn' }, 'Filter'),
    ),
    h(
      'section',
      { 'aria-labelledby': 'h-records' },
      h('h2', { id: 'h-records' }, `${r.total.toLocaleString()} vulnerabilities`),
      r.items.length ? r.items.map(record) : h('p', { class: 'muted' }, 'No installed version is known to be vulnerable.'),
      pager(page, PER_PAGE, r.total, 'vulnerabilities', (p) => href({ ...f, page: p })),
    ),
  );
}
