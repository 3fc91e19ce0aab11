// Formatting helpers shared by every view: durations in human units, timestamps, numbers and
// HTML escaping. Pure functions (no DOM), so they can be imported and checked under node.

const NS_PER_US = 1e3;
const NS_PER_MS = 1e6;
const NS_PER_S = 1e9;
const NS_PER_M = 60e9;
const NS_PER_H = 3600e9;
const NS_PER_D = 86400e9;

function pad2(n) {
  return n < 10 ? `0${n}` : String(n);
}

function pad3(n) {
  return n < 10 ? `00${n}` : n < 100 ? `0${n}` : String(n);
}

// Fixed decimals for a value below 1000 of its unit: 3 significant digits below 100
// (`4.47`, `12.3`), one decimal above (`123.4`); `digitsAbove100` overrides the latter.
function scaled(v, digitsAbove100) {
  if (v < 10) return v.toFixed(2);
  if (v < 100) return v.toFixed(1);
  return v.toFixed(digitsAbove100);
}

/**
 * A duration in nanoseconds as text: `412 ns`, `850 µs`, `12.3 µs`, `4.47 ms`, `123.4 ms`,
 * `4.47 s`, `2m 05s`, `3h 07m`, `2d 04h`. Negative values get a minus sign; null, undefined
 * and NaN give `-`.
 */
export function formatDuration(nanos) {
  if (nanos === null || nanos === undefined) return '-';
  let ns = Number(nanos);
  if (!Number.isFinite(ns)) return '-';
  if (ns < 0) return `-${formatDuration(-ns)}`;
  ns = Math.round(ns);
  if (ns < NS_PER_US) return `${ns} ns`;
  if (ns < NS_PER_MS) {
    const t = scaled(ns / NS_PER_US, 0);
    if (Number(t) < 1000) return `${t} µs`;
  }
  if (ns < NS_PER_S) {
    const t = scaled(ns / NS_PER_MS, 1);
    if (Number(t) < 1000) return `${t} ms`;
  }
  if (ns < NS_PER_M) {
    const t = (ns / NS_PER_S).toFixed(2);
    if (Number(t) < 60) return `${t} s`;
  }
  if (ns < NS_PER_H) {
    const s = Math.round(ns / NS_PER_S);
    if (s < 3600) return `${Math.floor(s / 60)}m ${pad2(s % 60)}s`;
  }
  if (ns < NS_PER_D) {
    const m = Math.round(ns / NS_PER_M);
    if (m < 1440) return `${Math.floor(m / 60)}h ${pad2(m % 60)}m`;
  }
  const h = Math.round(ns / NS_PER_H);
  return `${Math.floor(h / 24)}d ${pad2(h % 24)}h`;
}

/** Milliseconds as a duration (`formatDuration(ms * 1e6)`). */
export function formatMillis(ms) {
  return ms === null || ms === undefined ? '-' : formatDuration(Number(ms) * NS_PER_MS);
}

/** Unix nanoseconds (number or decimal string) to milliseconds since the epoch (a number). */
export function nanosToMillis(nanos) {
  if (nanos === null || nanos === undefined || nanos === '') return NaN;
  if (typeof nanos === 'string') {
    // Decimal strings keep full precision: split off the last 6 digits before converting.
    const s = nanos.trim();
    if (/^\d{7,}$/.test(s)) return Number(s.slice(0, -6)) + Number(s.slice(-6)) / 1e6;
    return Number(s) / 1e6;
  }
  return Number(nanos) / 1e6;
}

/** Unix nanoseconds to unix seconds (a float). */
export function nanosToSeconds(nanos) {
  return nanosToMillis(nanos) / 1e3;
}

/**
 * A timestamp (unix nanoseconds) in local time: `2026-12-05 07:10:47.114`.
 * With `{date: false}` only the time of day.
 */
export function formatTime(nanos, opts = {}) {
  const ms = nanosToMillis(nanos);
  if (!Number.isFinite(ms)) return '-';
  // Nanosecond numbers above 2^53 come with float error (1796454647114000000 / 1e6 is
  // ...113.9998): round to whole microseconds before truncating to milliseconds.
  const d = new Date(Math.floor(Math.round(ms * 1000) / 1000));
  const time = `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}` +
    `.${pad3(d.getMilliseconds())}`;
  if (opts.date === false) return time;
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${time}`;
}

/** A timestamp (unix nanoseconds) as an ISO 8601 UTC string, for tooltips. */
export function formatIsoUtc(nanos) {
  const ms = nanosToMillis(nanos);
  return Number.isFinite(ms) ? new Date(Math.floor(Math.round(ms * 1000) / 1000)).toISOString() : '';
}

/** Unix seconds as a local `YYYY-MM-DD HH:MM` (for time range labels). */
export function formatUnixSeconds(secs) {
  const d = new Date(Number(secs) * 1000);
  if (Number.isNaN(d.getTime())) return '-';
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ` +
    `${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
}

/** Unix seconds as the value of an `<input type="datetime-local">` (local time). */
export function toDatetimeLocal(secs) {
  const d = new Date(Number(secs) * 1000);
  if (Number.isNaN(d.getTime())) return '';
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}T` +
    `${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
}

/** The value of an `<input type="datetime-local">` as unix seconds (NaN when empty). */
export function fromDatetimeLocal(value) {
  if (!value) return NaN;
  const ms = new Date(value).getTime();
  return Number.isNaN(ms) ? NaN : Math.floor(ms / 1000);
}

/** A number with at most `digits` decimals (`0.405`), thousands unseparated; `-` for null. */
export function formatNumber(v, digits = 3) {
  if (v === null || v === undefined || v === '') return '-';
  const n = Number(v);
  if (!Number.isFinite(n)) return String(v);
  if (Number.isInteger(n)) return String(n);
  return String(Number(n.toFixed(digits)));
}

/** A count with thousands separated: `73,044`; `-` for null. */
export function formatCount(v) {
  if (v === null || v === undefined || v === '') return '-';
  if (typeof v === 'bigint') return v.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const n = Number(v);
  if (!Number.isFinite(n)) return String(v);
  const [int, frac] = String(Math.abs(n)).split('.');
  const sep = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${n < 0 ? '-' : ''}${sep}${frac ? `.${frac}` : ''}`;
}

/** A cost: `$0.0048`, `$12.35`, `<$0.0001`; `-` for null. */
export function formatCost(v) {
  if (v === null || v === undefined || v === '') return '-';
  const n = Number(v);
  if (!Number.isFinite(n)) return '-';
  if (n < 0) return `-${formatCost(-n)}`;
  if (n === 0) return '$0';
  if (n < 0.0001) return '<$0.0001';
  return n >= 1 ? `$${formatCount(n.toFixed(2))}` : `$${n.toFixed(4)}`;
}

/**
 * Unix nanoseconds as a decimal string (or number) to a BigInt, or null when absent or not an
 * integer: time ranges subtracted in BigInt keep every nanosecond.
 */
export function nanosBig(nanos) {
  if (nanos === null || nanos === undefined || nanos === '') return null;
  const s = String(nanos).trim();
  if (!/^-?\d+$/.test(s)) return null;
  return BigInt(s);
}

/** A probability (0..1) as a percentage: `96.0%`. */
export function formatPercent(p) {
  if (p === null || p === undefined || !Number.isFinite(Number(p))) return '-';
  const v = Number(p) * 100;
  return `${v >= 10 || v === 0 ? v.toFixed(1) : v.toPrecision(2)}%`;
}

const HTML_ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe to put in HTML element content or a double- or single-quoted attribute. */
export function escapeHtml(value) {
  if (value === null || value === undefined) return '';
  return String(value).replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
}

/** Any attribute value (string, number, bool, array, object) as display text. */
export function formatValue(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}
