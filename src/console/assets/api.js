// The console's one way to the server: its session (login, logout) and running abilities through the registry.
// It holds no rule: what a user may do is what the server answers.

const BASE = '/console/api';
let session = null;

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.code;
    this.data = body?.data;
  }
}

async function call(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (method !== 'GET') {
    headers['Content-Type'] = 'application/json';
    if (session) headers['X-CSRF-Token'] = session.csrf_token;
  }
  const res = await fetch(BASE + path, {
    method,
    headers,
    body: method === 'GET' ? undefined : JSON.stringify(body ?? {}),
    credentials: 'same-origin',
  });
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = { message: text };
  }
  if (!res.ok) {
    const err = new ApiError(res.status, json);
    if (res.status === 401 && path !== '/login') {
      // The browser drops an expired cookie itself, so the server cannot tell "expired" from "never logged in": we can.
      if (session && err.code === 'svc_console_login_required') err.message = 'Your console session has ended; log in again.';
      session = null;
      window.dispatchEvent(new CustomEvent('console:logged-out', { detail: err }));
    }
    throw err;
  }
  return json;
}

export async function loadSession() {
  try {
    session = await call('GET', '/session');
  } catch (e) {
    if (e.status === 401) session = null;
    else throw e;
  }
  return session;
}

export async function login(name, password) {
  session = await call('POST', '/login', { name, password });
  return session;
}

export async function logout() {
  try {
    await call('POST', '/logout', {});
  } finally {
    session = null;
  }
}

export const current = () => session;

/** Runs an ability (by its name, e.g. "list-sites-v1") as the logged-in user; throws ApiError. */
export function run(name, input) {
  return call('POST', `/run/${encodeURIComponent(name)}`, input === undefined ? {} : { input });
}

/** Does the registry offer this ability? */
export const has = (name) => !!session?.abilities.some((a) => a.name === name);

/** May this user run it? (Offered, and the server's permission rule lets this user's role run it.) The server checks again. */
export function may(name) {
  const a = session?.abilities.find((x) => x.name === name);
  return !!a && a.may === true;
}

export const takes = (name, field) => !!session?.abilities.find((a) => a.name === name)?.inputs.includes(field);

export const jobEventsUrl = (jobId) => `${BASE}/jobs/${encodeURIComponent(jobId)}/events`;
