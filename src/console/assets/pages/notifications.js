// Notifications: channels (add, test-send, edit, delete; a secret is typed, never shown again — a webhook's signing
// secret once, when it is made), rules (add, enable or disable, delete) and the delivery log with each failure's reason.
import { current, may, run } from '../api.js';
import { actionButton, confirmDialog, field, h, notice, pager, section, table, when } from '../dom.js';

const TYPES = ['email', 'slack', 'discord', 'teams', 'webhook'];
const PER_PAGE = 25;
/** Draws the delivery log again (a test-send adds to it). */
let reloadLog = null;
const list = (v) =>
  v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

const target = (c) => (c.type === 'email' ? `${c.smtp.host}:${c.smtp.port} → ${c.recipients.join(', ')}` : c.url);

/** The edit form of a channel: fields left empty keep what is stored (a password or URL is never read back). */
function editForm(c, reload) {
  const name = h('input', { name: 'name', value: c.name, maxlength: 100 });
  const url = h('input', { name: 'url', placeholder: 'unchanged' });
  const password = h('input', { name: 'password', type: 'password', placeholder: 'unchanged', autocomplete: 'new-password' });
  const recipients = h('input', { name: 'recipients', value: c.recipients.join(', ') });
  return h(
    'form',
    {
      class: 'stack',
      'aria-label': `Edit ${c.name}`,
      onsubmit: async (ev) => {
        ev.preventDefault();
        const patch = { channel_id: c.id, name: name.value.trim() };
        if (c.type === 'email') {
          patch.recipients = list(recipients.value);
          if (password.value) patch.password = password.value;
        } else if (url.value.trim()) patch.url = url.value.trim();
        try {
          await run('update-notification-channel-v1', patch);
          notice(`Channel ${patch.name} saved.`);
          await reload();
        } catch (e) {
          notice(e.message, 'error');
        }
      },
    },
    field('Name', name),
    c.type === 'email' ? [field('Recipients', recipients), field('SMTP password', password)] : field('New URL', url),
    h('button', { type: 'submit', class: 'btn btn-small' }, 'Save'),
  );
}

function channelRows(items, reload) {
  return items.map((c) => [
    c.name,
    c.type,
    target(c),
    h(
      'div',
      { class: 'actions' },
      may('test-notification-channel-v1')
        ? actionButton(
            'Test',
            async () => {
              const d = await run('test-notification-channel-v1', { channel_id: c.id });
              if (d.status === 'delivered') notice(`Test message delivered on ${c.name}.`);
              else notice(`Test on ${c.name} failed: ${d.last_error}`, 'error');
              await reloadLog?.();
            },
            { class: 'btn-small', attrs: { 'aria-label': `Test ${c.name}` } },
          )
        : '',
      may('update-notification-channel-v1')
        ? h('details', {}, h('summary', { 'aria-label': `Edit ${c.name}` }, 'Edit'), editForm(c, reload))
        : '',
      may('delete-notification-channel-v1')
        ? actionButton(
            'Delete…',
            async () => {
              await run('delete-notification-channel-v1', { channel_id: c.id, dry_run: true });
              if (!(await confirmDialog(`Delete channel ${c.name}?`, ['Its waiting messages fail.'], 'Delete channel'))) return;
              await run('delete-notification-channel-v1', { channel_id: c.id, confirm: true });
              notice(`Channel ${c.name} deleted.`);
              await reload();
            },
            { class: 'btn-small btn-danger', attrs: { 'aria-label': `Delete ${c.name}` } },
          )
        : '',
    ),
  ]);
}

function addChannelForm(reload) {
  const name = h('input', { name: 'name', required: true, maxlength: 100 });
  const type = h(
    'select',
    { name: 'type' },
    TYPES.map((t) => h('option', { value: t }, t)),
  );
  const url = h('input', { name: 'url', placeholder: 'https://hooks.slack.com/services/…' });
  const host = h('input', { name: 'smtp_host' });
  const port = h('input', { name: 'smtp_port', type: 'number', min: 1, max: 65535, value: 587 });
  const security = h(
    'select',
    { name: 'smtp_security' },
    ['starttls', 'tls', 'none'].map((s) => h('option', { value: s }, s)),
  );
  const username = h('input', { name: 'smtp_username' });
  const password = h('input', { name: 'smtp_password', type: 'password', autocomplete: 'new-password' });
  const from = h('input', { name: 'smtp_from', placeholder: 'Fleet <alerts@example.com>' });
  const recipients = h('input', { name: 'recipients', placeholder: 'a@example.com, b@example.com' });
  return h(
    'form',
    {
      class: 'stack',
      'aria-label': 'Add a channel',
      onsubmit: async (ev) => {
        ev.preventDefault();
        const input = { name: name.value.trim(), type: type.value };
        if (type.value === 'email') {
          input.smtp = {
            host: host.value.trim(),
            port: Number(port.value),
            security: security.value,
            username: username.value,
            from: from.value,
          };
          if (password.value) input.password = password.value;
          input.recipients = list(recipients.value);
        } else input.url = url.value.trim();
        try {
          const c = await run('add-notification-channel-v1', input);
          password.value = '';
          url.value = '';
          notice(c.secret ? `Channel ${c.name} created. Signing secret (shown this once): ${c.secret}` : `Channel ${c.name} created.`);
          await reload();
        } catch (e) {
          notice(e.message, 'error');
        }
      },
    },
    field('Name', name),
    field('Type', type),
    field('URL (slack, discord, teams, webhook)', url),
    h(
      'fieldset',
      {},
      h('legend', {}, 'E-mail'),
      field('SMTP host', host),
      field('SMTP port', port),
      field('Security', security),
      field('SMTP username', username),
      field('SMTP password', password),
      field('From', from),
      field('Recipients', recipients),
    ),
    h('button', { type: 'submit', class: 'btn' }, 'Add channel'),
  );
}

function ruleRows(items, channels, reload) {
  const named = new Map(channels.map((c) => [c.id, c.name]));
  return items.map((r) => [
    r.name,
    r.events.join(', '),
    named.get(r.channel_id) ?? `#${r.channel_id}`,
    r.mode + (r.quiet_hours ? `, quiet ${r.quiet_hours.from}–${r.quiet_hours.to} ${r.quiet_hours.time_zone}` : ''),
    h('span', { class: `badge badge-${r.enabled ? 'ok' : 'error'}` }, r.enabled ? 'on' : 'off'),
    h(
      'div',
      { class: 'actions' },
      may('update-notification-rule-v1')
        ? actionButton(
            r.enabled ? 'Disable' : 'Enable',
            async () => {
              await run('update-notification-rule-v1', { rule_id: r.id, enabled: !r.enabled });
              await reload();
            },
            { class: 'btn-small', attrs: { 'aria-label': `${r.enabled ? 'Disable' : 'Enable'} ${r.name}` } },
          )
        : '',
      may('delete-notification-rule-v1')
        ? actionButton(
            'Delete…',
            async () => {
              if (!(await confirmDialog(`Delete rule ${r.name}?`, ['Messages it made stay in the log.'], 'Delete rule'))) return;
              await run('delete-notification-rule-v1', { rule_id: r.id, confirm: true });
              notice(`Rule ${r.name} deleted.`);
              await reload();
            },
            { class: 'btn-small btn-danger', attrs: { 'aria-label': `Delete ${r.name}` } },
          )
        : '',
    ),
  ]);
}

function addRuleForm(channels, reload) {
  const name = h('input', { name: 'rule_name', required: true, maxlength: 100 });
  // The events the server knows (session.notification_events), so a new one appears here without a second list.
  const known = current().notification_events;
  const events = known.map((e) =>
    h('input', { name: `event-${e}`, type: 'checkbox', value: e, checked: e === 'site.down' || e === 'site.up' }),
  );
  const channel = h(
    'select',
    { name: 'channel' },
    channels.map((c) => h('option', { value: c.id }, `${c.name} (${c.type})`)),
  );
  const mode = h(
    'select',
    { name: 'mode' },
    ['immediate', 'hourly', 'daily'].map((m) => h('option', { value: m }, m)),
  );
  const tlsDays = h('input', { name: 'tls_days', type: 'number', min: 1, max: 365, value: 14 });
  return h(
    'form',
    {
      class: 'stack',
      'aria-label': 'Add a rule',
      onsubmit: async (ev) => {
        ev.preventDefault();
        try {
          await run('add-notification-rule-v1', {
            name: name.value.trim(),
            events: events.filter((e) => e.checked).map((e) => e.value),
            channel_id: Number(channel.value),
            mode: mode.value,
            tls_days: Number(tlsDays.value),
          });
          notice('Rule created.');
          await reload();
        } catch (e) {
          notice(e.message, 'error');
        }
      },
    },
    field('Rule name', name),
    h(
      'fieldset',
      {},
      h('legend', {}, 'Events'),
      known.map((e, i) => field(e, events[i])),
    ),
    field('Channel', channel),
    field('When', mode),
    field('TLS: days ahead', tlsDays),
    h('button', { type: 'submit', class: 'btn' }, 'Add rule'),
  );
}

export async function render(main, _params, query) {
  const page = Math.max(1, Number(query.get('page')) || 1);
  main.append(
    h('h1', {}, 'Notifications'),
    h('p', { class: 'muted' }, 'Where messages go (channels), which events go there (rules), and what was sent.'),
    section('Channels and rules', async (reload) => {
      const [channels, rules] = await Promise.all([run('list-notification-channels-v1', {}), run('list-notification-rules-v1', {})]);
      return h(
        'div',
        {},
        table('Channels', ['Name', 'Type', 'Sends to', ''], channelRows(channels.items, reload), 'No channels yet.'),
        may('add-notification-channel-v1') ? h('details', {}, h('summary', {}, 'Add a channel'), addChannelForm(reload)) : '',
        table('Rules', ['Name', 'Events', 'Channel', 'When', 'State', ''], ruleRows(rules.items, channels.items, reload), 'No rules yet.'),
        may('add-notification-rule-v1') && channels.items.length
          ? h('details', {}, h('summary', {}, 'Add a rule'), addRuleForm(channels.items, reload))
          : '',
      );
    }),
    section('Delivery log', async (reload) => {
      reloadLog = reload;
      const r = await run('list-notification-deliveries-v1', { page, per_page: PER_PAGE });
      const rows = r.items.map((d) => [
        when(d.created_at),
        `#${d.channel_id}`,
        d.kind,
        d.subject,
        h('span', { class: `badge badge-${d.status === 'delivered' ? 'ok' : d.status === 'failed' ? 'error' : 'pending'}` }, d.status),
        String(d.attempts),
        d.last_error ?? '',
      ]);
      return h(
        'div',
        {},
        table('Delivery log', ['When', 'Channel', 'Kind', 'Message', 'Status', 'Attempts', 'Last error'], rows, 'Nothing sent yet.'),
        pager(page, PER_PAGE, r.total, 'messages', (p) => `#/notifications?page=${p}`),
      );
    }),
  );
}
