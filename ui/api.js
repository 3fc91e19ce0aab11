// The one fetch wrapper every view uses. URLs are relative (`api/v1/...`) so the UI works under
// any path prefix. Credentials: with a bearer token stored in this tab's sessionStorage every
// request carries `Authorization: Bearer <token>`; otherwise, when a tenant is picked,
// `X-Scope-OrgID: <tenant>`. Non-2xx answers become ApiError with the server's message.
// Writes (`apiPost`) send JSON, which the server requires; it refuses cross-origin writes.

const TOKEN_KEY = 'sightline.token';
const TENANT_KEY = 'sightline.tenant';

let tenant = null;
let unauthorizedHandler = null;
let serverInfo = { auth: false, tenants: ['default'] };

/** An answer that was not 2xx (or no answer at all: status 0). */
export class ApiError extends Error {
  constructor(status, serverMessage, body) {
    const text = serverMessage || (status ? statusText(status) : 'no answer');
    super(status ? `HTTP ${status}: ${text}` : `network error: ${text}`);
    this.name = 'ApiError';
    this.status = status;
    this.serverMessage = text;
    this.body = body;
  }
}

function statusText(status) {
  const known = {
    400: 'bad request', 401: 'unauthorized', 403: 'forbidden', 404: 'not found',
    413: 'request too large', 415: 'unsupported media type', 422: 'query too large',
    429: 'too many requests', 500: 'internal server error', 502: 'bad gateway',
    503: 'service unavailable', 504: 'gateway timeout',
  };
  return known[status] || 'request failed';
}

function session() {
  try {
    return window.sessionStorage;
  } catch {
    return null; // storage disabled: keep working, just without remembering
  }
}

/** The stored bearer token, or null. */
export function getToken() {
  return session()?.getItem(TOKEN_KEY) || null;
}

/** Stores (or with a falsy value forgets) the bearer token for this tab. */
export function setToken(token) {
  const s = session();
  if (!s) return;
  if (token) s.setItem(TOKEN_KEY, token);
  else s.removeItem(TOKEN_KEY);
}

/** The tenant remembered in this tab (sessionStorage), or null. */
export function getStoredTenant() {
  return session()?.getItem(TENANT_KEY) || null;
}

/** Picks the tenant sent as `X-Scope-OrgID` (when no token is set) and remembers it. */
export function setTenant(name) {
  tenant = name || null;
  const s = session();
  if (!s) return;
  if (tenant) s.setItem(TENANT_KEY, tenant);
  else s.removeItem(TENANT_KEY);
}

/** The tenant currently sent, or null. */
export function currentTenant() {
  return tenant;
}

/**
 * What `api/v1/tenants` answered (`{auth, tenants}`), as the app read it at start-up: with
 * auth off every tenant with data (and `default`), with auth on the token's tenant only.
 */
export function tenantsInfo() {
  return { auth: serverInfo.auth, tenants: serverInfo.tenants.slice() };
}

/** Set by the app once it has read `api/v1/tenants` (views read it with `tenantsInfo()`). */
export function setTenantsInfo(info) {
  serverInfo = {
    auth: !!(info && info.auth),
    tenants: Array.isArray(info && info.tenants) && info.tenants.length ? info.tenants.map(String) : ['default'],
  };
}

/**
 * Registers `fn(error)`, called when any request is answered 401 (a token expired or was
 * revoked while the UI was open), so the app can ask for a token again.
 */
export function onUnauthorized(fn) {
  unauthorizedHandler = fn;
}

/** The headers that carry the credentials of this tab. */
export function authHeaders() {
  const h = {};
  const token = getToken();
  if (token) h.Authorization = `Bearer ${token}`;
  else if (tenant) h['X-Scope-OrgID'] = tenant;
  return h;
}

/**
 * `path` (relative, e.g. `api/v1/traces/search`) with `params` as its query string: arrays
 * become repeated parameters; null, undefined and '' are left out.
 */
export function buildUrl(path, params) {
  if (!params) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    const values = Array.isArray(v) ? v : [v];
    for (const one of values) {
      if (one === null || one === undefined || one === '') continue;
      q.append(k, String(one));
    }
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/**
 * GETs `path` with `params` and answers the parsed JSON. Throws ApiError for non-2xx answers
 * (message `HTTP <status>: <server's error>`), and for network failures (status 0). An
 * aborted request throws the AbortError unchanged.
 * Options: `signal` (AbortSignal), `quiet401` (do not call the unauthorized handler).
 */
export async function apiGet(path, params, opts = {}) {
  return request('GET', buildUrl(path, params), undefined, opts);
}

/**
 * POSTs `body` as JSON (`Content-Type: application/json`, which the server requires of
 * writes; same origin, so its cross-origin guard lets it through) to `path` and answers the
 * parsed JSON (null for an empty answer, e.g. 202). Errors as `apiGet`.
 */
export async function apiPost(path, body, opts = {}) {
  return request('POST', path, body === undefined ? '' : JSON.stringify(body), opts);
}

async function request(method, url, payload, opts) {
  let res;
  const headers = { Accept: 'application/json', ...authHeaders() };
  if (payload !== undefined) headers['Content-Type'] = 'application/json';
  try {
    res = await fetch(url, {
      method,
      headers,
      body: payload,
      signal: opts.signal,
      credentials: 'same-origin',
      cache: 'no-store',
    });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(0, e && e.message ? e.message : String(e));
  }
  const text = await res.text();
  let body = null;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
  }
  if (!res.ok) {
    let message = '';
    if (body && typeof body === 'object') {
      message = typeof body.error === 'string' ? body.error
        : body.error ? JSON.stringify(body.error) : (body.message || '');
    } else if (text) {
      message = text.trim().slice(0, 300);
    }
    const err = new ApiError(res.status, message, body);
    if (res.status === 401 && !opts.quiet401 && unauthorizedHandler) unauthorizedHandler(err);
    throw err;
  }
  if (body === null && text) throw new ApiError(res.status, 'the answer is not JSON', null);
  return body;
}

/** Native APIs wrap answers in `{"status": "success", "data": ...}`: answers `data`. */
export async function apiData(path, params, opts) {
  return unwrap(await apiGet(path, params, opts));
}

/** `apiPost` unwrapping `{"status": "success", "data": ...}` like `apiData`. */
export async function apiPostData(path, body, opts) {
  return unwrap(await apiPost(path, body, opts));
}

function unwrap(body) {
  return body && typeof body === 'object' && 'data' in body && body.status === 'success'
    ? body.data : body;
}

/** Whether `e` is the error of an aborted request (a view navigated away). */
export function isAbort(e) {
  return !!e && e.name === 'AbortError';
}
