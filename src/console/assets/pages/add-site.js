// Add a site: the child's URL, its WordPress administrator and that administrator's password, sent once to
// add-site-v1 (which connects the site through MainWP Child and syncs it). The password goes in that one call and
// nowhere else: the field is emptied as soon as the call is made, nothing is kept in the browser, and the server
// stores no copy (the child checks it once). A refusal shows the child's own reason.
import { may, run } from '../api.js';
import { clear, field, h, notice } from '../dom.js';

/** What the person reads when the call fails: the child's refusal stands out from the server's own errors. */
function failure(e) {
  const code = e?.code ? h('span', { class: 'code' }, ` (${e.code})`) : '';
  if (e?.code === 'svc_child_refused')
    return h(
      'div',
      { class: 'error', role: 'alert' },
      h('p', {}, h('strong', {}, 'The site refused the connection.')),
      h('p', {}, e.message, code),
    );
  if (e?.code === 'svc_connection_failed')
    return h(
      'div',
      { class: 'error', role: 'alert' },
      h('p', {}, h('strong', {}, 'The site could not be reached.')),
      h('p', {}, e.message, code),
    );
  return h('p', { class: 'error', role: 'alert' }, e?.message ?? String(e), code);
}

export async function render(main) {
  if (!may('add-site-v1')) {
    clear(main, h('h1', {}, 'Add a site'), h('p', { class: 'muted' }, 'Only an administrator adds sites.'));
    return;
  }
  const url = h('input', {
    name: 'url',
    type: 'url',
    required: true,
    maxlength: 2000,
    placeholder: 'https://shop.example.com',
    autocomplete: 'off',
  });
  const admin = h('input', { name: 'admin', required: true, maxlength: 200, autocomplete: 'off', spellcheck: 'false' });
  // new-password: the browser must not fill in the console's own saved password here.
  const password = h('input', { name: 'admin_password', type: 'password', maxlength: 500, autocomplete: 'new-password' });
  const out = h('div', { 'aria-live': 'polite', id: 'add-site-result' });
  const form = h(
    'form',
    {
      class: 'card stacked',
      'aria-labelledby': 'h-add-site',
      onsubmit: async (ev) => {
        ev.preventDefault();
        const button = form.querySelector('button[type=submit]');
        const input = { url: url.value.trim(), admin: admin.value.trim() };
        if (password.value !== '') input.admin_password = password.value;
        password.value = ''; // sent once, kept nowhere
        button.disabled = true;
        button.setAttribute('aria-busy', 'true');
        clear(out, h('p', { class: 'muted' }, 'Connecting to the site…'));
        try {
          const site = await run('add-site-v1', input);
          notice(`Site ${site.name} added and synced.`);
          location.hash = `#/sites/${site.id}`;
        } catch (e) {
          clear(out, failure(e));
          password.focus();
        } finally {
          button.disabled = false;
          button.removeAttribute('aria-busy');
        }
      },
    },
    h('h2', { id: 'h-add-site' }, 'Connect a WordPress site'),
    h(
      'p',
      { class: 'muted' },
      'The site needs the MainWP Child plugin, active. sitefleet sends the password once, to the site, to connect; it ' +
        'does not keep it.',
    ),
    field('Site URL', url),
    field('Administrator user name', admin),
    field('Administrator password', password),
    h('button', { type: 'submit', class: 'btn btn-primary' }, 'Add site'),
    out,
  );
  clear(main, h('h1', {}, 'Add a site'), form, h('p', {}, h('a', { href: '#/' }, 'Back to the fleet')));
  url.focus();
}
