// WordPress users on a real child: list, create, edit, delete and the connection administrator's password, through
// REST and one MCP call, each checked inside WordPress.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { realSite, serverWithRealSite, wp, wpJson } from './kit.js';

const K = 2;
let s: TestServer;
let id: number;

type WpUser = { ID: number; user_login: string; user_email: string; roles: string[]; first_name: string } | null;
const wpUser = (login: string) =>
  wpJson<WpUser>(
    K,
    `$u = get_user_by('login', ${JSON.stringify(login)}); return $u ? ['ID' => $u->ID, 'user_login' => $u->user_login, 'user_email' => $u->user_email, 'roles' => array_values($u->roles), 'first_name' => $u->first_name] : null;`,
  );
const login = `lane_${Date.now().toString(36)}`;

beforeAll(async () => {
  wp(
    K,
    `require_once ABSPATH . 'wp-admin/includes/user.php'; foreach (get_users(['search' => 'lane_*', 'search_columns' => ['user_login']]) as $u) wp_delete_user($u->ID);`,
  );
  ({ s, id } = await serverWithRealSite(K, startServer));
});
afterAll(async () => {
  await s?.close();
});

describe('users on a real child', () => {
  let userId: number;

  it('creates a user with the role asked for', async () => {
    const r = await s.rest('/users/create', {
      method: 'POST',
      json: { websites: String(id), username: login, email: `${login}@example.com`, role: 'editor', first_name: 'Lane' },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.total_success).toBe(1);
    const u = wpUser(login)!;
    expect(u).toMatchObject({ user_login: login, user_email: `${login}@example.com`, roles: ['editor'], first_name: 'Lane' });
    userId = u.ID;
    expect(r.body.data.created_sites[id].user_id).toBe(userId);
  });

  it('lists users as WordPress has them', async () => {
    const r = await s.rest(`/users?websites=${id}&search=${login}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(JSON.stringify(r.body.data)).toContain(login);
    const all = await s.rest(`/users?websites=${id}`);
    const count = wpJson<number>(K, 'return count(get_users());');
    expect(all.body.total).toBe(count);
  });

  it('edits a user: the role and the e-mail change, nothing else', async () => {
    const r = await s.rest(`/users/${id}/${userId}/edit`, { method: 'PUT', json: { role: 'author', email: `${login}+2@example.com` } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(wpUser(login)).toMatchObject({ roles: ['author'], user_email: `${login}+2@example.com`, first_name: 'Lane' });
  });

  it("sets the connection administrator's password through MCP, and WordPress accepts it", async () => {
    const c = new Client({ name: 'lane', version: '1' });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${s.creds.key.read_write}` } },
      }),
    );
    try {
      const password = `Lane-${Date.now()}-pw!`;
      const r = await c.callTool({ name: 'update-admin-password-v1', arguments: { websites: [id], password } });
      expect(r.isError ?? false, JSON.stringify(r.structuredContent)).toBe(false);
      expect(
        wpJson<boolean>(
          K,
          `$u = get_user_by('login', 'admin'); return wp_check_password(${JSON.stringify(password)}, $u->user_pass, $u->ID);`,
        ),
      ).toBe(true);
    } finally {
      // The kit's password again, for the files after this one.
      wp(K, `wp_set_password(${JSON.stringify(realSite(K).password)}, get_user_by('login', 'admin')->ID);`);
      await c.close();
    }
  });

  it('deletes the user', async () => {
    const r = await s.rest(`/users/${id}/${userId}/delete`, { method: 'DELETE' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(wpUser(login)).toBeNull();
  });
});
