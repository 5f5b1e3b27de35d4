// Building the page: elements from data, always as text (never HTML from an answer), and a few shared widgets.

/** h('a', {href: '#/', class: 'x', onclick: fn}, 'text', child, [more]) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const STATUS_LABEL = { connected: 'Connected', disconnected: 'Disconnected', suspended: 'Suspended' };
export const statusBadge = (status) => h('span', { class: `badge badge-${status}` }, STATUS_LABEL[status] ?? status);

export function when(iso) {
  if (!iso) return 'never';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** A table with a caption (for screen readers) and a scrolling wrapper (for phones). */
export function table(caption, head, rows, empty = 'Nothing here.') {
  if (!rows.length) return h('p', { class: 'muted' }, empty);
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      {},
      h('caption', { class: 'sr-only' }, caption),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          head.map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h(
        'tbody',
        {},
        rows.map((r) =>
          h(
            'tr',
            {},
            r.map((c) => h('td', {}, c)),
          ),
        ),
      ),
    ),
  );
}

/** "Page 2 of 40 (1,990 sites)" with previous / next links built by `href(page)`. */
export function pager(page, perPage, total, noun, href) {
  const pages = Math.max(1, Math.ceil(total / perPage));
  return h(
    'nav',
    { class: 'pager', 'aria-label': 'Pages' },
    page > 1 ? h('a', { href: href(page - 1), rel: 'prev' }, '← Previous') : h('span', { class: 'muted' }, '← Previous'),
    h('span', { class: 'pager-where' }, `Page ${page} of ${pages} (${total.toLocaleString()} ${noun})`),
    page < pages ? h('a', { href: href(page + 1), rel: 'next' }, 'Next →') : h('span', { class: 'muted' }, 'Next →'),
  );
}

/** A section whose body loads on its own; a failure shows in it without breaking the page. */
export function section(title, load, opts = {}) {
  const body = h('div', { class: 'section-body' }, h('p', { class: 'muted' }, 'Loading…'));
  const el = h(
    'section',
    { class: `card ${opts.class ?? ''}`, 'aria-labelledby': `h-${slug(title)}` },
    h('h2', { id: `h-${slug(title)}` }, title),
    body,
  );
  const reload = async () => {
    try {
      clear(body, await load(reload));
    } catch (e) {
      clear(body, errorText(e));
    }
  };
  void reload();
  return el;
}

export const slug = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-');

export function errorText(e) {
  return h('p', { class: 'error', role: 'alert' }, e?.message ?? String(e), e?.code ? h('span', { class: 'code' }, ` (${e.code})`) : '');
}

let noticeTimer;
/** A message in the live region at the top (read out by screen readers). */
export function notice(text, kind = 'ok') {
  const el = document.getElementById('notice');
  clear(el, h('p', { class: `notice-${kind}` }, text));
  clearTimeout(noticeTimer);
  if (kind === 'ok') noticeTimer = setTimeout(() => clear(el), 8000);
}

/**
 * The preview of a destructive action (its dry run) in a modal dialog; resolves true only on "Confirm".
 * The dialog is native: Escape cancels, focus stays inside, and it starts on Cancel.
 */
export function confirmDialog(title, lines, confirmLabel) {
  return new Promise((resolve) => {
    const dlg = h(
      'dialog',
      { class: 'confirm', 'aria-labelledby': 'dlg-title' },
      h('h2', { id: 'dlg-title' }, title),
      h(
        'ul',
        {},
        lines.map((l) => h('li', {}, l)),
      ),
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'button', class: 'btn', value: 'cancel', onclick: () => dlg.close('cancel') }, 'Cancel'),
        h('button', { type: 'button', class: 'btn btn-danger', value: 'confirm', onclick: () => dlg.close('confirm') }, confirmLabel),
      ),
    );
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(dlg.returnValue === 'confirm');
    });
    document.body.append(dlg);
    dlg.showModal();
    dlg.querySelector('button').focus();
  });
}

/** A button that disables itself while its action runs, and reports the outcome. */
export function actionButton(label, action, opts = {}) {
  const b = h('button', { type: 'button', class: `btn ${opts.class ?? ''}`, ...(opts.attrs ?? {}) }, label);
  b.addEventListener('click', async () => {
    b.disabled = true;
    b.setAttribute('aria-busy', 'true');
    try {
      await action(b);
    } catch (e) {
      notice(`${label}: ${e.message}`, 'error');
    } finally {
      b.disabled = false;
      b.removeAttribute('aria-busy');
    }
  });
  return b;
}

/** A labelled form field. */
export function field(label, input) {
  if (!input.id) input.id = `f-${slug(label)}-${Math.random().toString(36).slice(2, 7)}`;
  return h('div', { class: 'field' }, h('label', { for: input.id }, label), input);
}
