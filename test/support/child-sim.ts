// test/support/child-sim.ts — a child simulator with a connector wired to it, registered sites, and raw protocol requests.
import { request } from 'undici';
import {
  ChildConnector,
  startChildSim,
  type ChildSimOptions,
  type ConnectorOptions,
  type Registration,
  type SiteCredentials,
} from '../../src/child/index.js';
import { openReply } from '../../src/child/envelope.js';
import { encodeForm, type FormInput } from '../../src/child/form.js';
import { newNonce, signRequest } from '../../src/child/keys.js';

export const SERVER_URL = 'https://fleet.example/wp-admin/';

export async function childFixture(options: ChildSimOptions & { connector?: Partial<ConnectorOptions> } = {}) {
  const { connector: connectorOptions, ...simOptions } = options;
  const sim = await startChildSim({ sites: 3, ...simOptions });
  // The simulator listens on loopback, which the connector refuses by default.
  const connector = new ChildConnector({ serverUrl: SERVER_URL, allowPrivateAddresses: true, ...connectorOptions });
  return {
    sim,
    connector,
    /** Registers simulated site `index` through the connector and returns what a store would keep. */
    async register(index = 1): Promise<SiteCredentials & Registration> {
      const site = sim.sites[index - 1]!;
      const registration = await connector.register({ url: site.url, admin: site.admin, adminPassword: site.password, sslVerify: true });
      return { ...registration, url: site.url, admin: site.admin, sslVerify: true };
    },
    async close(): Promise<void> {
      await connector.close();
      await sim.close();
    },
  };
}

/** POSTs a form to a URL and returns status and raw body (no classification). */
export async function postForm(url: string, form: Record<string, FormInput>): Promise<{ status: number; body: string }> {
  const res = await request(url, {
    method: 'POST',
    body: encodeForm(form),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  return { status: res.statusCode, body: await res.body.text() };
}

/** A hand-built signed call to admin-ajax.php, classified like the connector does; for protocol edge cases. */
export async function rawSignedCall(
  site: { url: string; admin: string; privateKeyPem: string },
  fn: string,
  options: { signAlgo?: number; signWith?: number; fields?: Record<string, FormInput> } = {},
): Promise<unknown> {
  const nonce = newNonce();
  const signature = await signRequest(fn, nonce, site.privateKeyPem, options.signWith ?? options.signAlgo ?? 7);
  const form: Record<string, FormInput> = {
    user: site.admin,
    function: fn,
    nonce,
    mainwpver: '6.1.2',
    sign_algo: options.signAlgo,
    mainwpsignature: signature,
    ...options.fields,
  };
  const res = await request(`${site.url}wp-admin/admin-ajax.php`, {
    method: 'POST',
    body: encodeForm(form),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  const body = Buffer.from(await res.body.arrayBuffer());
  return openReply({ status: res.statusCode, location: null, body });
}
