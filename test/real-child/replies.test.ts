// The real child's replies to every function sitefleet calls, recorded (SITEFLEET_RECORD_REPLIES=1) as the fixtures
// that keep the simulator honest (test/child-replies.test.ts), or checked against them (the default): a new child
// version that answers differently shows up here first.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ChildConnector } from '../../src/child/connector.js';
import { rawSignedCall } from '../support/child-sim.js';
import { normalise, replyScript, shape } from '../support/reply-script.js';
import { offer, realSite, resetSite } from './kit.js';

const K = 1;
const DIR = join(import.meta.dirname, '..', 'fixtures', 'child-replies');
const FILE = join(DIR, 'real-child-6.1.json');
const record = process.env.SITEFLEET_RECORD_REPLIES === '1';

let replies: Record<string, unknown>;

beforeAll(async () => {
  resetSite(K);
  // rc-gamma 1.0.0 → 1.1.0 is on offer on every kit site; the theme is offered here.
  offer(K, '--theme', 'rc-tt5-child', '--to', '1.1.0');
  const site = realSite(K);
  const connector = new ChildConnector({ serverUrl: 'https://fleet.example/wp-admin/', allowPrivateAddresses: true });
  try {
    const reg = await connector.register({ url: site.url, admin: site.admin, adminPassword: site.password, sslVerify: true });
    const creds = { url: site.url, admin: site.admin, privateKeyPem: reg.privateKeyPem };
    replies = await replyScript((fn, fields) => rawSignedCall(creds, fn, { signAlgo: reg.signAlgo, fields }), {
      plugin: 'rc-beta/rc-beta.php',
      theme: 'twentytwentyfour',
      childTheme: 'rc-tt5-child',
      parentTheme: 'twentytwentyfive',
      updatePlugin: 'rc-gamma/rc-gamma.php',
      updateTheme: 'rc-tt5-child',
    });
  } finally {
    await connector.close();
  }
  resetSite(K);
});

describe("the real child's replies", () => {
  it(record ? 'are recorded as fixtures' : 'still have the shape of the recorded fixtures', () => {
    const normalised = normalise(replies) as Record<string, unknown>;
    if (record) {
      mkdirSync(DIR, { recursive: true });
      writeFileSync(FILE, JSON.stringify(normalised, null, 1) + '\n');
      return;
    }
    expect(existsSync(FILE), `no fixtures yet: run SITEFLEET_RECORD_REPLIES=1 npm run test:real-child`).toBe(true);
    const fixtures = JSON.parse(readFileSync(FILE, 'utf8')) as Record<string, unknown>;
    // The fields, not the data: what a site holds (its plugins, its log events) varies, so lists and maps are left out.
    const fields = (v: unknown) =>
      [...shape(v).keys()].filter((p) => !p.includes('*') && !p.includes('[]') && p.split('.').length <= 3).sort();
    for (const [step, reply] of Object.entries(normalised)) expect(fields(reply), step).toEqual(fields(fixtures[step]));
  });
});
