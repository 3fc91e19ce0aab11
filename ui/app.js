// Entry point: reads `api/v1/tenants`, asks for a bearer token when auth is on (or shows the
// tenant picker when it is off), then runs the hash router that mounts the views, and owns the
// layout parts every view shares: the nav links and the time range picker.

import {
  apiGet, getToken, setToken, setTenant, getStoredTenant, currentTenant, onUnauthorized,
  setTenantsInfo,
} from './api.js';
import { h, loadingBox, errorBox, setChildren } from './dom.js';
import {
  currentRoute, navigate, updateParams, link, globalParams, timeRange, RANGES,
} from './route.js';
import { toDatetimeLocal, fromDatetimeLocal } from './format.js';
import * as overviewView from './views/overview.js';
import * as tracesView from './views/traces.js';
import * as traceView from './views/trace.js';
import * as qualityView from './views/quality.js';
import * as anomaliesView from './views/anomalies.js';
import * as logsView from './views/logs.js';
import * as causalityView from './views/causality.js';

const main = document.getElementById('main');
const timeSlot = document.getElementById('time-range-slot');
const tenantSlot = document.getElementById('tenant-slot');

/** What `api/v1/tenants` said: `{auth, tenants}`. */
const state = { auth: false, tenants: ['default'], ready: false };

/** The mounted view: `{key, tenant, view}`. */
let current = null;

/** The views: `nav` is the nav link (`data-nav`) marked active while the view is shown. */
const one = (name) => (s) => s.length === 1 && s[0] === name;
const ROUTES = [
  { key: 'overview', nav: 'overview', title: 'Overview', module: overviewView,
    match: (s) => s.length === 0 || (s.length === 1 && s[0] === 'overview') },
  { key: 'traces', nav: 'traces', title: 'Traces', match: one('traces'), module: tracesView },
  { key: 'trace', nav: 'traces', title: 'Trace', match: (s) => s.length === 2 && s[0] === 'trace', module: traceView },
  { key: 'quality', nav: 'quality', title: 'Quality', match: one('quality'), module: qualityView },
  { key: 'anomalies', nav: 'anomalies', title: 'Anomalies', match: one('anomalies'), module: anomaliesView },
  { key: 'logs', nav: 'logs', title: 'Logs', match: one('logs'), module: logsView },
  { key: 'causality', nav: 'causality', title: 'Causality', match: one('causality'), module: causalityView },
];

// ---- auth and tenant -------------------------------------------------------------------

/** Reads the server's auth mode and tenants, then starts the router or asks for a token. */
async function bootstrap() {
  state.ready = false;
  unmountView();
  setChildren(main, loadingBox('Connecting to Sightline…'));
  let info;
  try {
    info = await apiGet('api/v1/tenants', null, { quiet401: true });
  } catch (e) {
    if (e.status === 401) {
      const hadToken = !!getToken();
      setToken(null);
      showAuthPrompt(hadToken ? e : null);
      return;
    } else {
      setChildren(main, errorBox('Connecting to Sightline failed', e, bootstrap));
      return;
    }
  }
  state.auth = !!(info && info.auth);
  state.tenants = Array.isArray(info && info.tenants) && info.tenants.length
    ? info.tenants.map(String) : ['default'];
  setTenantsInfo(state); // for the views (the overview says how many tenants there are)
  if (state.auth && !getToken()) {
    showAuthPrompt(null);
    return;
  }
  state.ready = true;
  renderTenantSlot();
  route();
}

/** The token form; `err` (a failed attempt) is shown above it. */
function showAuthPrompt(err) {
  state.ready = false;
  unmountView();
  setChildren(timeSlot);
  setChildren(tenantSlot);
  const input = h('input', {
    type: 'password', id: 'auth-token', name: 'token', 'data-testid': 'auth-token',
    autocomplete: 'off', spellcheck: 'false', required: true, placeholder: 'bearer token',
  });
  const submit = h('button', { type: 'submit', 'data-testid': 'auth-submit', class: 'primary' },
    'Sign in');
  const form = h('form', { class: 'auth-prompt card', 'data-testid': 'auth-prompt' },
    h('h2', {}, 'Sign in to Sightline'),
    h('p', { class: 'muted' }, 'This server requires a bearer token (one of the tokens in its ',
      h('code', {}, '--auth-tokens-file'), '). It is kept in this browser tab only.'),
    err ? h('p', { class: 'state error', 'data-testid': 'auth-error', role: 'alert' }, err.message)
      : null,
    h('label', { for: 'auth-token' }, 'Token'),
    h('div', { class: 'row' }, input, submit));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    if (!token) return;
    submit.disabled = true;
    setToken(token);
    await bootstrap();
  });
  setChildren(main, form);
  input.focus();
}

// A token that stops working while the UI is open (revoked, server restarted with other
// tokens): ask again.
onUnauthorized((err) => {
  if (!state.ready) return;
  setToken(null);
  showAuthPrompt(err);
});

/** Tenant picker (auth off) or the token's tenant with a sign-out button (auth on). */
function renderTenantSlot() {
  if (state.auth) {
    setChildren(tenantSlot,
      h('span', { class: 'tenant-label', 'data-testid': 'auth-tenant' },
        'Tenant ', h('strong', {}, state.tenants[0] || '?')),
      h('button', {
        type: 'button', class: 'link-button', 'data-testid': 'auth-logout',
        onclick: () => { setToken(null); showAuthPrompt(null); },
      }, 'Sign out'));
    setTenant(null);
    return;
  }
  const select = h('select', { 'data-testid': 'tenant-picker', 'aria-label': 'Tenant' });
  select.addEventListener('change', () => {
    setTenant(select.value);
    updateParams({ tenant: select.value });
  });
  setChildren(tenantSlot, h('label', { class: 'tenant-label' }, 'Tenant ', select));
}

/** The tenant the URL (then this tab's storage, then `default`) names, shown in the picker. */
function syncTenant(params) {
  if (state.auth) return null;
  const wanted = params.get('tenant') || getStoredTenant() || 'default';
  if (currentTenant() !== wanted) setTenant(wanted);
  const select = tenantSlot.querySelector('select');
  if (select) {
    const names = state.tenants.includes(wanted) ? state.tenants : [...state.tenants, wanted];
    if (select.options.length !== names.length ||
        [...select.options].some((o, i) => o.value !== names[i])) {
      setChildren(select, names.map((n) => h('option', { value: n }, n)));
    }
    select.value = wanted;
  }
  return wanted;
}

// ---- time range picker -----------------------------------------------------------------

/**
 * Sets the time range keys; a view with a filter form (`pendingParams()`) has its typed
 * filters applied with it, as they are shown.
 */
function applyTimeRange(changes) {
  const pending = current && current.view && current.view.pendingParams
    ? current.view.pendingParams() : null;
  if (!pending) {
    updateParams(changes);
    return;
  }
  const r = currentRoute();
  const p = globalParams(r.params);
  for (const [k, v] of Object.entries(changes)) {
    p.delete(k);
    if (v !== null && v !== undefined && v !== '') p.set(k, String(v));
  }
  for (const [k, v] of pending) p.append(k, v);
  navigate(r.path, p);
}

function renderTimeRange(params) {
  const tr = timeRange(params);
  const select = h('select', { 'data-testid': 'time-range', 'aria-label': 'Time range' },
    RANGES.map((r) => h('option', { value: r.key }, r.label)),
    h('option', { value: 'custom' },
      tr.custom ? 'Custom range' : 'Custom…'));
  select.value = tr.custom ? 'custom' : tr.since;
  const custom = h('form', { class: 'custom-range' });
  const from = h('input', {
    type: 'datetime-local', 'data-testid': 'time-start', 'aria-label': 'From',
    value: toDatetimeLocal(tr.start),
  });
  const to = h('input', {
    type: 'datetime-local', 'data-testid': 'time-end', 'aria-label': 'To',
    value: toDatetimeLocal(tr.end),
  });
  custom.append(from, h('span', {}, '–'), to,
    h('button', { type: 'submit', 'data-testid': 'time-apply' }, 'Apply'));
  custom.hidden = !tr.custom;
  custom.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const s = fromDatetimeLocal(from.value);
    const e = fromDatetimeLocal(to.value);
    if (!Number.isFinite(s) || !Number.isFinite(e) || e <= s) {
      to.setCustomValidity('the end must be after the start');
      to.reportValidity();
      return;
    }
    to.setCustomValidity('');
    applyTimeRange({ since: null, start: s, end: e });
  });
  select.addEventListener('change', () => {
    if (select.value === 'custom') {
      custom.hidden = false;
      from.focus();
      return;
    }
    applyTimeRange({ since: select.value, start: null, end: null });
  });
  setChildren(timeSlot, select, custom);
}

// ---- router ----------------------------------------------------------------------------

function unmountView() {
  if (current && current.view && current.view.unmount) current.view.unmount();
  current = null;
}

/** Points the nav links at their views (keeping tenant and time range); marks `def`'s. */
function updateNav(def) {
  for (const a of document.querySelectorAll('[data-nav]')) {
    const key = a.dataset.nav;
    a.setAttribute('href', link(key === 'overview' ? '/' : `/${key}`));
    const active = !!def && def.nav === key;
    a.classList.toggle('active', active);
    if (active) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const brand = document.querySelector('.brand');
  if (brand) brand.setAttribute('href', link('/'));
}

/** Mounts (or updates) the view the current fragment names. */
function route() {
  if (!state.ready) return;
  const r = currentRoute();
  const tenant = syncTenant(r.params);
  if (!state.auth && r.params.get('tenant') !== tenant) {
    // Keep the tenant in the URL so the link is shareable.
    updateParams({ tenant }, { replace: true });
    return;
  }
  renderTimeRange(r.params);
  const def = ROUTES.find((d) => d.match(r.segments));
  updateNav(def);
  if (!def) {
    unmountView();
    setChildren(main, h('div', { class: 'state error', 'data-testid': 'not-found' },
      `No view at ${r.path}. `, h('a', { href: link('/traces') }, 'Go to traces')));
    return;
  }
  const key = def.key;
  if (current && current.key === key && current.tenant === tenant &&
      current.view && current.view.update && current.view.update(r) !== false) {
    return;
  }
  unmountView();
  main.replaceChildren();
  document.title = `Sightline · ${def.title}`;
  current = { key, tenant, view: def.module.mount(main, r) };
}

window.addEventListener('hashchange', route);
bootstrap();
