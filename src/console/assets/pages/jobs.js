// Background jobs: the ones started from this browser, any job by its ID, and one job's progress live (server-sent
// events from /console/api/jobs/<id>/events; no reload, no polling from the page).
import { jobEventsUrl, run } from '../api.js';
import { clear, errorText, field, h, table, when } from '../dom.js';

const KEY = 'sitefleet.jobs';
const remembered = () => {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) ?? '[]');
  } catch {
    return [];
  }
};
/** A job started from this browser, listed on the Jobs page (the Updates page's queued runs too). */
export function remember(id) {
  const list = remembered().filter((x) => x !== id);
  sessionStorage.setItem(KEY, JSON.stringify([id, ...list].slice(0, 20)));
}

export async function render(main, [jobId]) {
  return jobId ? renderJob(main, jobId) : renderList(main);
}

async function renderList(main) {
  const idInput = h('input', { name: 'job_id', required: true, placeholder: 'sync_…', pattern: '[\\w-]+' });
  const ids = remembered();
  const rows = await Promise.all(
    ids.map(async (id) => {
      try {
        const j = await run('get-batch-job-status-v1', { job_id: id });
        return [h('a', { href: `#/jobs/${id}` }, id), j.type, j.status, `${j.processed} / ${j.total}`, when(j.started_at)];
      } catch (e) {
        return [id, '—', e.code === 'svc_job_not_found' ? 'expired' : e.message, '—', '—'];
      }
    }),
  );
  clear(
    main,
    h('h1', {}, 'Jobs'),
    h('p', { class: 'muted' }, 'Batches over the queue threshold run in the background; their progress shows here live.'),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'h-started' },
      h('h2', { id: 'h-started' }, 'Started from this browser'),
      table('Jobs', ['Job', 'Type', 'Status', 'Sites', 'Started'], rows, 'None yet.'),
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'h-follow' },
      h('h2', { id: 'h-follow' }, 'Follow a job'),
      h(
        'form',
        {
          class: 'filters',
          onsubmit: (ev) => {
            ev.preventDefault();
            location.hash = `#/jobs/${idInput.value.trim()}`;
          },
        },
        field('Job ID', idInput),
        h('button', { type: 'submit', class: 'btn' }, 'Open'),
      ),
    ),
  );
}

async function renderJob(main, jobId) {
  const bar = h('progress', { id: 'job-progress', max: 100, value: 0 });
  const text = h('p', { id: 'job-text', 'aria-live': 'polite' }, 'Connecting…');
  const facts = h('dl', { class: 'facts' });
  const errors = h('div', {});
  const stream = h('p', { class: 'muted small', id: 'job-stream' }, '');
  clear(
    main,
    h('p', { class: 'crumbs' }, h('a', { href: '#/jobs' }, 'Jobs'), ' / ', jobId),
    h('h1', {}, 'Job'),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'h-progress' },
      h('h2', { id: 'h-progress' }, 'Progress'),
      h('label', { for: 'job-progress', class: 'sr-only' }, 'Progress'),
      bar,
      text,
      facts,
      stream,
    ),
    h('section', { class: 'card', 'aria-labelledby': 'h-errors' }, h('h2', { id: 'h-errors' }, 'Sites that failed'), errors),
  );

  const show = (j) => {
    bar.value = j.progress;
    bar.dataset.status = j.status;
    main.dataset.jobStatus = j.status;
    text.textContent = `${j.status}: ${j.processed} of ${j.total} sites (${j.progress} %)`;
    clear(
      facts,
      [
        ['Type', j.type],
        ['Succeeded', j.succeeded],
        ['Failed', j.failed],
        ['Started', when(j.started_at)],
        ['Finished', when(j.completed_at)],
        ...(j.failure ? [['Why it failed', j.failure]] : []),
      ].map(([k, v]) => [h('dt', {}, k), h('dd', {}, String(v))]),
    );
    clear(
      errors,
      table(
        'Failed sites',
        ['Site', 'Code', 'Message'],
        j.errors.map((e) => [h('a', { href: `#/sites/${e.site_id}` }, `#${e.site_id}`), e.code, e.message]),
        'None.',
      ),
    );
  };

  remember(jobId);
  const es = new EventSource(jobEventsUrl(jobId));
  let ended = false;
  es.addEventListener('job', (ev) => show(JSON.parse(ev.data)));
  es.addEventListener('end', (ev) => {
    ended = true;
    show(JSON.parse(ev.data));
    stream.textContent = 'Finished.';
    es.close();
  });
  es.addEventListener('expired', () => {
    ended = true;
    es.close();
    window.dispatchEvent(new CustomEvent('console:logged-out', { detail: { message: 'Your console session has ended; log in again.' } }));
  });
  es.addEventListener('failure', (ev) => {
    ended = true;
    es.close();
    clear(errors, errorText(JSON.parse(ev.data)));
  });
  es.addEventListener('open', () => {
    stream.textContent = 'Live.';
  });
  es.addEventListener('error', async () => {
    if (ended) return;
    if (es.readyState === EventSource.CLOSED) {
      // The server refused the stream: say why (unknown job, session over, too many streams).
      try {
        show(await run('get-batch-job-status-v1', { job_id: jobId }));
        stream.textContent = 'Live updates stopped; reload to resume.';
      } catch (e) {
        clear(text, errorText(e));
      }
    } else stream.textContent = 'Reconnecting…';
  });
  return () => es.close();
}
