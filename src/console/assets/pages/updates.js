// Updates across the fleet (issue 17: select, preview with dry_run, confirm, apply). Shown only when the registry has
// list-updates-v1. The list is list-updates-v1's answer, paged on the server; an administrator picks items (on any
// page, or "every pending update" of the filter), sees run-updates-v1's / update-all-v1's dry run in a dialog, confirms,
// and gets each item's result (updated / errors / skipped); a run over the queue threshold is a background job whose
// progress and per-item results arrive live. A viewer sees the list and no control that writes.
import { jobEventsUrl, may, run } from '../api.js';
import { actionButton, clear, confirmDialog, errorText, field, h, notice, pager, table } from '../dom.js';
import { remember } from './jobs.js';

const PER_PAGE = 50;
/** Items one apply may pick one by one (run-updates-v1 takes 200 slugs a call); more: "every pending update". */
export const MAX_PICKED = 200;
/** Lines of a preview or a result table shown; the counts cover all of them. */
const MAX_LINES = 50;
const TYPES = [
  ['', 'All types'],
  ['core', 'Core'],
  ['plugins', 'Plugins'],
  ['themes', 'Themes'],
  ['translations', 'Translations'],
];
const PLURAL = { core: 'core', plugin: 'plugins', theme: 'themes', translation: 'translations' };
const REASON = {
  ignored: 'Ignored',
  not_pending: 'Not pending',
  site_suspended: 'Site suspended',
  site_disconnected: 'Site disconnected',
  cancelled: 'Cancelled',
};

/** The picked items, kept while the person pages and filters (until an apply or a logout). */
const picked = new Map();
const key = (u) => `${u.site_id}|${u.type}|${u.slug}|${u.language ?? ''}`;
window.addEventListener('console:logged-out', () => picked.clear());

/** Items' names by site and slug, from the list and the previews (failed and skipped items carry only the slug). */
const names = new Map();
const learn = (u) => {
  if (u.name) names.set(`${u.site_id}|${u.slug}`, u.name);
};
const nameOf = (x) => (x.slug ? (names.get(`${x.site_id}|${x.slug}`) ?? x.slug) : '—');
const itemName = (u) => `${u.name ?? u.slug}${u.language ? ` (${u.language})` : ''}`;
const siteLink = (u) => (u.site_id ? h('a', { href: `#/sites/${u.site_id}` }, u.site_name || u.site_url) : u.site_url);
const versions = (from, to) => `${from ?? '—'} → ${to ?? '—'}`;

function hrefWith(query, changes) {
  const q = new URLSearchParams(query);
  for (const [k, v] of Object.entries(changes)) {
    if (v === '' || v === undefined || v === null) q.delete(k);
    else q.set(k, String(v));
  }
  const s = q.toString();
  return `#/updates${s ? `?${s}` : ''}`;
}

/**
 * The picked items as run-updates-v1 calls that update exactly them: sites picking the same items (types and slugs)
 * share one call, so that no call names a slug on a site where it was not picked.
 */
function batches(items) {
  const bySite = new Map();
  for (const u of items) bySite.set(u.site_id, [...(bySite.get(u.site_id) ?? []), u]);
  const groups = new Map();
  for (const [siteId, list] of bySite) {
    const types = [...new Set(list.map((u) => PLURAL[u.type]))].sort();
    const slugs = [...new Set(list.map((u) => u.slug))].sort();
    const k = `${types.join(',')}\n${slugs.join('\n')}`;
    const g = groups.get(k) ?? { ability: 'run-updates-v1', input: { site_ids_or_domains: [], types, specific_items: slugs } };
    g.input.site_ids_or_domains.push(siteId);
    groups.set(k, g);
  }
  return [...groups.values()];
}

/** The result tables of a run: updated, failed, skipped (each the first MAX_LINES, with the count). */
function resultTables(r, { hideEmpty = false } = {}) {
  const more = (list, total) => (total > list.length ? h('p', { class: 'muted small' }, `The first ${list.length} of ${total}.`) : '');
  const part = (title, id, list, total, head, row, empty) =>
    hideEmpty && !total
      ? ''
      : h(
          'div',
          { class: `result-part ${id}` },
          h('h3', {}, `${title} (${total})`),
          table(title, head, list.slice(0, MAX_LINES).map(row), empty),
          more(list.slice(0, MAX_LINES), total),
        );
  return [
    part(
      'Updated',
      'result-updated',
      r.updated,
      r.updatedTotal ?? r.updated.length,
      ['Site', 'Type', 'Item', 'Version'],
      (u) => [siteLink(u), u.type, itemName(u), versions(u.old_version, u.new_version)],
      'Nothing updated.',
    ),
    part(
      'Failed',
      'result-errors',
      r.errors,
      r.errorsTotal ?? r.errors.length,
      ['Site', 'Type', 'Item', 'Why'],
      (e) => [siteLink(e), e.type, nameOf(e), h('span', {}, e.message, h('span', { class: 'code' }, ` (${e.code})`))],
      'No failure.',
    ),
    part(
      'Skipped',
      'result-skipped',
      r.skipped,
      r.skippedTotal ?? r.skipped.length,
      ['Site', 'Type', 'Item', 'Why'],
      (s) => [siteLink(s), s.type, nameOf(s), `${REASON[s.reason] ?? s.reason}: ${s.message}`],
      'Nothing skipped.',
    ),
  ];
}

/** A queued run: its job's progress and per-item results, live (server-sent events), until it ends. */
function followJob(jobId, box, onEnd) {
  remember(jobId);
  const bar = h('progress', { max: 100, value: 0, 'aria-label': `Progress of job ${jobId}` });
  const text = h('p', { class: 'job-text', 'aria-live': 'polite' }, 'Connecting…');
  const items = h('div', {});
  clear(box, h('h3', {}, 'Background job ', h('a', { href: `#/jobs/${jobId}` }, jobId)), bar, text, items);
  const show = (j) => {
    bar.value = j.progress;
    box.dataset.jobStatus = j.status;
    text.textContent = `${j.status}: ${j.processed} of ${j.total} sites (${j.progress} %)${j.failure ? `; ${j.failure}` : ''}`;
    // The job's item rows (status updated / failed / skipped); a site that failed as a whole (its lock, its keys) is
    // in errors[] only.
    const rows = j.items ?? [];
    const of = (status) => rows.filter((i) => i.status === status);
    const siteOnly = j.errors
      .filter((e) => !rows.some((i) => i.status === 'failed' && i.site_id === e.site_id))
      .map((e) => ({ ...e, site_url: `#${e.site_id}`, type: 'site', slug: '' }));
    clear(
      items,
      resultTables({ updated: of('updated'), errors: [...of('failed'), ...siteOnly], skipped: of('skipped') }),
      (j.items_total ?? 0) > rows.length
        ? h('p', { class: 'muted small' }, `${j.items_total} item results in all; the job page lists the first ${rows.length}.`)
        : '',
    );
  };
  const es = new EventSource(jobEventsUrl(jobId));
  let ended = false;
  const end = (j) => {
    ended = true;
    es.close();
    if (j) show(j);
    onEnd?.(j);
  };
  es.addEventListener('job', (ev) => show(JSON.parse(ev.data)));
  es.addEventListener('end', (ev) => end(JSON.parse(ev.data)));
  es.addEventListener('expired', () => {
    end(null);
    window.dispatchEvent(new CustomEvent('console:logged-out', { detail: { message: 'Your console session has ended; log in again.' } }));
  });
  es.addEventListener('failure', (ev) => {
    end(null);
    items.append(errorText(JSON.parse(ev.data)));
  });
  es.addEventListener('error', async () => {
    if (ended || es.readyState !== EventSource.CLOSED) return;
    try {
      show(await run('get-batch-job-status-v1', { job_id: jobId }));
      text.append(' Live updates stopped; the job page resumes them.');
    } catch (e) {
      clear(text, errorText(e));
    }
  });
  return () => es.close();
}

export async function render(main, _params, query) {
  const page = Math.max(1, Number(query.get('page')) || 1);
  const type = TYPES.some(([t]) => t && t === query.get('type')) ? query.get('type') : '';
  const canRun = may('run-updates-v1');
  const canAll = may('update-all-v1');
  const closers = [];

  const count = h('p', { id: 'picked-count', 'aria-live': 'polite' });
  const results = h('section', { class: 'card', id: 'update-results', 'aria-labelledby': 'h-results', hidden: true });
  const listBox = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const summaryLine = h('p', { id: 'updates-summary' });
  const showCount = () => {
    count.textContent = `${picked.size} selected${picked.size ? ` (on ${new Set([...picked.values()].map((u) => u.site_id)).size} site(s))` : ''}.`;
  };

  const load = async () => {
    const r = await run('list-updates-v1', { page, per_page: PER_PAGE, ...(type ? { types: [type] } : {}) });
    const s = r.summary;
    summaryLine.textContent = `${s.total.toLocaleString()} pending${type ? '' : `: ${s.core} core, ${s.plugins} plugins, ${s.themes} themes, ${s.translations} translations`}.`;
    const boxes = [];
    const rows = r.updates.map((u) => {
      learn(u);
      const cells = [
        siteLink(u),
        u.type,
        h('span', {}, itemName(u), h('br'), h('span', { class: 'muted small' }, u.slug)),
        u.current_version ?? '—',
        u.new_version,
      ];
      if (!canRun) return cells;
      const box = h('input', {
        type: 'checkbox',
        checked: picked.has(key(u)),
        'aria-label': `Select ${itemName(u)} on ${u.site_name || u.site_url}`,
        onchange: (ev) => {
          if (ev.target.checked && !picked.has(key(u)) && picked.size >= MAX_PICKED) {
            ev.target.checked = false;
            return notice(`At most ${MAX_PICKED} items can be picked one by one; use "Update all pending…" for more.`, 'error');
          }
          if (ev.target.checked) picked.set(key(u), u);
          else picked.delete(key(u));
          showCount();
        },
      });
      boxes.push(box);
      return [box, ...cells];
    });
    const all =
      canRun && boxes.length
        ? h('input', {
            type: 'checkbox',
            'aria-label': 'Select every update on this page',
            onchange: (ev) => {
              for (const b of boxes)
                if (b.checked !== ev.target.checked) {
                  b.checked = ev.target.checked;
                  b.dispatchEvent(new Event('change'));
                }
            },
          })
        : h('span', { class: 'sr-only' }, 'Select');
    const errs = r.errors.length ? h('p', { class: 'error' }, r.errors.map((e) => e.message).join(' ')) : '';
    clear(
      listBox,
      errs,
      table(
        'Pending updates',
        [...(canRun ? [all] : []), 'Site', 'Type', 'Item', 'Installed', 'Available'],
        rows,
        type ? `No pending ${type} update.` : 'Everything is up to date.',
      ),
      pager(page, PER_PAGE, r.total, 'updates', (p) => hrefWith(query, { page: p })),
    );
    showCount();
    return r;
  };

  /** Dry runs of every call, then (after the dialog) the runs; immediate results in a table, queued ones followed live. */
  const preview = async (calls, title, applied = () => {}) => {
    const dry = await Promise.all(calls.map((c) => run(c.ability, { ...c.input, dry_run: true })));
    const would = dry.flatMap((d) => d.would_update ?? []);
    would.forEach(learn);
    const wouldTotal = dry.reduce((n, d) => n + (d.would_update_total ?? d.would_update?.length ?? 0), 0);
    const sites = dry.reduce((n, d) => n + (d.sites_to_update ?? 0), 0);
    const skipped = dry.flatMap((d) => d.skipped);
    const errors = dry.flatMap((d) => d.errors);
    const lines = [
      ...would
        .slice(0, MAX_LINES)
        .map((u) => `${itemName(u)} on ${u.site_name || u.site_url}: ${versions(u.current_version, u.new_version)}`),
      ...(wouldTotal > Math.min(would.length, MAX_LINES) ? [`…and ${wouldTotal - Math.min(would.length, MAX_LINES)} more.`] : []),
      ...skipped.slice(0, 10).map((s) => `Skipped: ${s.slug || s.site_url} on ${s.site_name || s.site_url} (${s.message})`),
      ...errors.slice(0, 10).map((e) => `Cannot run: ${e.message}`),
    ];
    if (!wouldTotal) {
      notice(
        `Nothing to update${
          skipped.length || errors.length
            ? `: ${[...skipped, ...errors]
                .slice(0, 3)
                .map((x) => x.message)
                .join(' ')}`
            : ' (as of the last sync).'
        }`,
        'error',
      );
      return;
    }
    if (!(await confirmDialog(`${title}: ${wouldTotal} update(s) on ${sites} site(s)?`, lines, 'Apply updates'))) return;
    const outs = await Promise.allSettled(calls.map((c) => run(c.ability, { ...c.input, confirm: true })));
    applied();
    const done = outs.filter((o) => o.status === 'fulfilled').map((o) => o.value);
    const failed = outs.filter((o) => o.status === 'rejected').map((o) => o.reason);
    const now = done.filter((o) => !o.queued);
    const jobs = done.filter((o) => o.queued);
    // A queued answer's skipped items and errors (suspended sites, ignored items) are final at once: shown with the
    // immediate results; its updates arrive with the job.
    const sum = (f) => done.reduce((n, o) => n + f(o), 0);
    const r = {
      updated: now.flatMap((o) => o.updated),
      errors: done.flatMap((o) => o.errors),
      skipped: done.flatMap((o) => o.skipped),
      updatedTotal: sum((o) => (o.queued ? 0 : o.summary.total_updated)),
      errorsTotal: sum((o) => o.summary.total_errors),
      skippedTotal: sum((o) => o.summary.total_skipped),
    };
    const anyNow = now.length || r.errorsTotal || r.skippedTotal;
    results.hidden = false;
    const jobBoxes = jobs.map((o) => h('div', { class: 'job-box', 'data-job-id': o.job_id }));
    clear(
      results,
      h('h2', { id: 'h-results' }, 'Result'),
      failed.map((e) => errorText(e)),
      now.length
        ? h(
            'div',
            { id: 'result-now' },
            h('p', {}, `Updated ${r.updatedTotal}; ${r.errorsTotal} failed; ${r.skippedTotal} skipped.`),
            resultTables(r),
          )
        : anyNow
          ? h(
              'div',
              { id: 'result-now' },
              h('p', {}, `Not queued: ${r.errorsTotal} failed; ${r.skippedTotal} skipped.`),
              resultTables(r, { hideEmpty: true }),
            )
          : '',
      jobs.length
        ? h(
            'p',
            {},
            `${jobs.reduce((n, o) => n + (o.updates_queued ?? 0), 0)} update(s) on ${jobs.reduce((n, o) => n + (o.sites_queued ?? 0), 0)} site(s) run in the background:`,
          )
        : '',
      jobBoxes,
    );
    if (now.length || failed.length) {
      notice(
        `Updated ${r.updatedTotal}; ${r.errorsTotal + failed.length} failed; ${r.skippedTotal} skipped.`,
        r.errorsTotal || failed.length ? 'error' : 'ok',
      );
    } else if (jobs.length) {
      notice(`${jobs.reduce((n, o) => n + (o.updates_queued ?? 0), 0)} update(s) queued as a background job; its progress shows below.`);
    }
    jobs.forEach((o, i) =>
      closers.push(
        followJob(o.job_id, jobBoxes[i], (j) => {
          if (j)
            notice(
              `Job ${o.job_id} ${j.status}: ${j.succeeded} of ${j.total} sites updated without error.`,
              j.status === 'completed' && !j.failed ? 'ok' : 'error',
            );
          void load().catch((e) => clear(listBox, errorText(e)));
        }),
      ),
    );
    await load();
    results.scrollIntoView({ block: 'start' });
  };

  const typeSelect = h(
    'select',
    { name: 'type' },
    TYPES.map(([t, label]) => h('option', { value: t, selected: t === type }, label)),
  );
  const filters = h(
    'form',
    {
      class: 'filters',
      onsubmit: (ev) => {
        ev.preventDefault();
        location.hash = hrefWith('', { type: typeSelect.value });
      },
    },
    field('Type', typeSelect),
    h('button', { type: 'submit', class: 'btn' }, 'Filter'),
  );
  const typeLabel = TYPES.find(([t]) => t === type)[1].toLowerCase();
  const oneOf = { core: 'core', plugins: 'plugin', themes: 'theme', translations: 'translation' }[type];
  const actions = canRun
    ? h(
        'div',
        { class: 'actions', role: 'group', 'aria-label': 'Apply updates' },
        actionButton(
          'Preview and apply selected…',
          async () => {
            if (!picked.size) return notice('Select updates first.', 'error');
            await preview(batches([...picked.values()]), 'Apply the selected updates', () => picked.clear());
          },
          { class: 'btn-primary', attrs: { id: 'apply-selected' } },
        ),
        canAll
          ? actionButton(
              type ? `Update all pending ${typeLabel}…` : 'Update everything pending…',
              () =>
                preview(
                  [{ ability: 'update-all-v1', input: type ? { types: [type] } : {} }],
                  `Apply every pending ${type ? `${oneOf} ` : ''}update`,
                ),
              { attrs: { id: 'apply-all' } },
            )
          : '',
        actionButton(
          'Clear selection',
          async () => {
            picked.clear();
            await load();
          },
          { attrs: { id: 'clear-selection' } },
        ),
        count,
      )
    : '';

  await load();
  clear(
    main,
    h('h1', {}, 'Updates'),
    summaryLine,
    h('p', { class: 'muted small' }, "As of each site's last sync (sync a site to refresh it); ignored updates are not listed."),
    actions,
    results,
    h('section', { class: 'card', 'aria-labelledby': 'h-updates' }, h('h2', { id: 'h-updates' }, 'Pending updates'), filters, listBox),
  );
  return () => {
    for (const c of closers) c();
  };
}
