// Small DOM helpers shared by the views: element creation and the loading / error / empty
// state boxes (every state says what happened, in words).

/**
 * Creates `<tag>` with `attrs` (`class`, `dataset` object, `on*` listeners, `text`, anything
 * else as an attribute; false/null skip) and `children` (nodes or strings).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** A "working on it" line: `<div class="state loading" data-testid="loading">`. */
export function loadingBox(text, testid = 'loading') {
  return h('div', { class: 'state loading', 'data-testid': testid, role: 'status' },
    h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
}

/**
 * An error box saying what failed and why (`what`: e.g. "Searching traces failed"), with the
 * error's message (`HTTP 401: missing or unknown bearer token`). `retry` adds a button.
 */
export function errorBox(what, err, retry, testid = 'error') {
  const msg = err && err.message ? err.message : String(err);
  const box = h('div', { class: 'state error', 'data-testid': testid, role: 'alert' },
    h('strong', {}, what), ': ', h('span', { class: 'error-message' }, msg));
  if (err && err.status === 422) {
    box.append(h('div', { class: 'hint' }, 'Narrow the time range or add filters.'));
  }
  if (retry) {
    box.append(' ', h('button', { type: 'button', class: 'link-button', onclick: retry }, 'Retry'));
  }
  return box;
}

/** A "nothing here" line: `<div class="state empty">`. */
export function emptyBox(text, testid = 'empty') {
  return h('div', { class: 'state empty', 'data-testid': testid }, text);
}

/** Replaces the children of `el` with `nodes`. */
export function setChildren(el, ...nodes) {
  el.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false));
}
