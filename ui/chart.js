// Hand-drawn SVG charts shared by the views: time and value scales with "nice" ticks, a chart
// frame (grid, axes, tick labels), line and band paths that break at missing points, a colour
// palette, and a hover read-out. SVG is built with DOM calls (`svg()`), never from strings, so
// labels from the server are text nodes. Step helpers (`niceStep`, `parseDuration`) live here
// too: every chart picks its step from its time range.

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Distinct line colours, in order of the series' (sorted) names. */
export const PALETTE = [
  '#2563eb', '#ea580c', '#16a34a', '#9333ea', '#0891b2', '#ca8a04', '#db2777', '#4b5563',
  '#65a30d', '#dc2626', '#7c3aed', '#0d9488',
];

/** The colour of the `i`th series. */
export function colorOf(i) {
  return PALETTE[((i % PALETTE.length) + PALETTE.length) % PALETTE.length];
}

/** Creates an SVG element: `attrs` as attributes (`text` as its text), then `children`. */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// ---- steps and durations ---------------------------------------------------------------

const NICE_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 3600, 7200,
  10800, 21600, 43200, 86400];

/** The smallest nice step (seconds, at least `min`) that cuts `rangeSecs` into <= `points`. */
export function niceStep(rangeSecs, points = 120, min = 1) {
  const want = Math.max(min, rangeSecs / Math.max(1, points));
  for (const s of NICE_STEPS) if (s >= want) return s;
  return Math.ceil(want / 86400) * 86400;
}

/** Seconds as the API's duration syntax: `90s`, `5m`, `2h`, `1d`. */
export function formatStep(secs) {
  const s = Math.round(Number(secs));
  if (s % 86400 === 0) return `${s / 86400}d`;
  if (s % 3600 === 0) return `${s / 3600}h`;
  if (s % 60 === 0) return `${s / 60}m`;
  return `${s}s`;
}

const UNIT_SECS = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };

/** `60s`, `5m`, `1h30m`, `1d`, `250ms` or a plain number of seconds as seconds; NaN if bad. */
export function parseDuration(text) {
  const t = String(text ?? '').trim();
  if (!t) return NaN;
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t);
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)/gy;
  let total = 0;
  let m;
  let at = 0;
  while ((m = re.exec(t)) !== null) {
    total += Number(m[1]) * UNIT_SECS[m[2]];
    at = re.lastIndex;
  }
  return at === t.length && at > 0 ? total : NaN;
}

// ---- scales and ticks ------------------------------------------------------------------

/** About `count` round tick values covering [min, max]: `{ticks, min, max}` (min/max widened). */
export function niceTicks(min, max, count = 5) {
  let lo = Number(min);
  let hi = Number(max);
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return { ticks: [0, 1], min: 0, max: 1 };
  if (hi === lo) {
    const pad = Math.abs(lo) > 0 ? Math.abs(lo) * 0.1 : 1;
    lo -= pad;
    hi += pad;
  }
  const raw = (hi - lo) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * mag).find((s) => s >= raw) || 10 * mag;
  const first = Math.floor(lo / step) * step;
  const last = Math.ceil(hi / step) * step;
  const ticks = [];
  for (let v = first; v <= last + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
  return { ticks, min: first, max: last };
}

/** A value for an axis label: `0.25`, `1.5k`, `2.3M`, `1e-4`. */
export function formatAxisValue(v) {
  const n = Number(v);
  if (!Number.isFinite(n)) return '';
  const a = Math.abs(n);
  if (a === 0) return '0';
  if (a >= 1e9) return `${Number((n / 1e9).toPrecision(3))}G`;
  if (a >= 1e6) return `${Number((n / 1e6).toPrecision(3))}M`;
  if (a >= 1e4) return `${Number((n / 1e3).toPrecision(3))}k`;
  if (a < 1e-3) return n.toExponential(1);
  return String(Number(n.toPrecision(4)));
}

const TIME_STEPS_S = [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
  172800, 604800];

function pad2(n) {
  return n < 10 ? `0${n}` : String(n);
}

/** Tick positions (ms) at round local times between `startMs` and `endMs`, with labels. */
export function timeTicks(startMs, endMs, count = 6) {
  const span = (endMs - startMs) / 1000;
  const step = TIME_STEPS_S.find((s) => s >= span / Math.max(1, count)) || 604800;
  const offsetMs = new Date(startMs).getTimezoneOffset() * 60000;
  const stepMs = step * 1000;
  let t = Math.ceil((startMs - offsetMs) / stepMs) * stepMs + offsetMs;
  const out = [];
  const withDate = span > 86400;
  for (; t <= endMs && out.length < 50; t += stepMs) {
    const d = new Date(t);
    const hm = `${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
    const md = `${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
    out.push({ ms: t, label: withDate ? (step >= 86400 ? md : `${md} ${hm}`) : hm });
  }
  return out;
}

// ---- paths -----------------------------------------------------------------------------

/**
 * The `d` of a line through `points` (`[[ms, value or null], ...]`): a gap (null or
 * non-finite) starts a new segment. Lone points (no neighbour on either side) come back in
 * `dots` so they can be drawn as circles.
 */
export function linePath(points, x, y) {
  let d = '';
  const dots = [];
  let run = [];
  const flush = () => {
    if (run.length === 1) dots.push(run[0]);
    else if (run.length > 1) {
      d += run.map(([px, py], i) => `${i ? 'L' : 'M'}${px.toFixed(1)},${py.toFixed(1)}`).join('');
    }
    run = [];
  };
  for (const [t, v] of points) {
    const n = v === null || v === undefined || v === '' ? NaN : Number(v);
    if (!Number.isFinite(n)) {
      flush();
      continue;
    }
    run.push([x(t), y(n)]);
  }
  flush();
  return { d, dots };
}

/**
 * The `d` of the area between `lower` and `upper` (maps ms -> value): one closed polygon per
 * run of times where both are known. `times` is the time grid (ms, ascending).
 */
export function bandPath(times, lower, upper, x, y) {
  let d = '';
  let run = [];
  const flush = () => {
    if (run.length >= 2) {
      const top = run.map(([t, , hi], i) => `${i ? 'L' : 'M'}${x(t).toFixed(1)},${y(hi).toFixed(1)}`);
      const bottom = run.slice().reverse().map(([t, lo]) => `L${x(t).toFixed(1)},${y(lo).toFixed(1)}`);
      d += `${top.join('')}${bottom.join('')}Z`;
    }
    run = [];
  };
  for (const t of times) {
    const lo = lower.get(t);
    const hi = upper.get(t);
    if (Number.isFinite(lo) && Number.isFinite(hi)) run.push([t, lo, hi]);
    else flush();
  }
  flush();
  return d;
}

// ---- the frame -------------------------------------------------------------------------

/**
 * An empty chart: `{svg, plot, x, y, width, height, margin}` where `x(ms)` and `y(value)` map
 * into the plot area, which `plot` (a `<g>`) is clipped to. Options: `width`, `height`,
 * `startMs`, `endMs`, `yMin`, `yMax` (the data's extent; widened to nice ticks unless
 * `exactY`), `yFormat`, `testid`, `label` (aria-label), `yLabel`.
 */
export function createChart(o) {
  const width = Math.max(320, Math.round(o.width || 900));
  const height = Math.max(120, Math.round(o.height || 260));
  const margin = { top: 10, right: 14, bottom: 24, left: 56 };
  const yt = o.exactY ? { ticks: niceTicks(o.yMin, o.yMax, 4).ticks.filter((v) => v >= o.yMin && v <= o.yMax), min: o.yMin, max: o.yMax }
    : niceTicks(o.yMin, o.yMax, o.yTicks || 4);
  const pw = width - margin.left - margin.right;
  const ph = height - margin.top - margin.bottom;
  const span = Math.max(1, o.endMs - o.startMs);
  const x = (ms) => margin.left + ((ms - o.startMs) / span) * pw;
  const ySpan = yt.max - yt.min || 1;
  const y = (v) => margin.top + ph - ((v - yt.min) / ySpan) * ph;
  const clipId = `clip-${Math.random().toString(36).slice(2, 10)}`;
  const fmt = o.yFormat || formatAxisValue;
  const root = svg('svg', {
    class: 'chart', viewBox: `0 0 ${width} ${height}`, width: '100%', role: 'img',
    'data-testid': o.testid, 'aria-label': o.label || 'chart', preserveAspectRatio: 'xMidYMid meet',
  });
  root.append(svg('defs', {}, svg('clipPath', { id: clipId },
    svg('rect', { x: margin.left, y: margin.top - 1, width: pw, height: ph + 2 }))));
  const grid = svg('g', { class: 'grid' });
  for (const v of yt.ticks) {
    grid.append(svg('line', { x1: margin.left, x2: margin.left + pw, y1: y(v), y2: y(v) }),
      svg('text', { class: 'y-tick', x: margin.left - 6, y: y(v) + 4, 'text-anchor': 'end', text: fmt(v) }));
  }
  for (const t of timeTicks(o.startMs, o.endMs, Math.max(2, Math.floor(pw / 110)))) {
    grid.append(svg('line', { class: 'x-grid', x1: x(t.ms), x2: x(t.ms), y1: margin.top, y2: margin.top + ph }),
      svg('text', { class: 'x-tick', x: x(t.ms), y: height - 6, 'text-anchor': 'middle', text: t.label }));
  }
  grid.append(svg('line', { class: 'axis', x1: margin.left, x2: margin.left + pw, y1: margin.top + ph, y2: margin.top + ph }));
  if (o.yLabel) {
    grid.append(svg('text', { class: 'y-label', x: 4, y: margin.top + 8, text: o.yLabel }));
  }
  const plot = svg('g', { class: 'plot', 'clip-path': `url(#${clipId})` });
  root.append(grid, plot);
  return { svg: root, plot, x, y, width, height, margin, pw, ph, yMin: yt.min, yMax: yt.max, startMs: o.startMs, endMs: o.endMs };
}

/** [min, max] over every finite value of `seriesValues` (iterables of numbers), or null. */
export function extent(...seriesValues) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const vals of seriesValues) {
    for (const v of vals) {
      const n = v === null || v === '' ? NaN : Number(v);
      if (!Number.isFinite(n)) continue;
      if (n < lo) lo = n;
      if (n > hi) hi = n;
    }
  }
  return lo === Infinity ? null : [lo, hi];
}

/**
 * A hover read-out: a vertical line follows the pointer over `chart`'s plot and a tooltip in
 * `wrap` (a positioned element holding the svg) shows `rowsAt(ms)`: `{title, rows: [{label,
 * value, color}]}` or null. Text only (textContent).
 */
export function attachHover(wrap, chart, rowsAt) {
  const line = svg('line', { class: 'hover-line', y1: chart.margin.top, y2: chart.margin.top + chart.ph, visibility: 'hidden' });
  chart.svg.append(line);
  const tip = document.createElement('div');
  tip.className = 'chart-tip';
  tip.hidden = true;
  tip.setAttribute('data-testid', 'chart-tooltip');
  wrap.append(tip);
  const hide = () => {
    tip.hidden = true;
    line.setAttribute('visibility', 'hidden');
  };
  chart.svg.addEventListener('mouseleave', hide);
  chart.svg.addEventListener('mousemove', (ev) => {
    const r = chart.svg.getBoundingClientRect();
    if (!r.width) return;
    const vx = ((ev.clientX - r.left) / r.width) * chart.width;
    if (vx < chart.margin.left || vx > chart.margin.left + chart.pw) {
      hide();
      return;
    }
    const ms = chart.startMs + ((vx - chart.margin.left) / chart.pw) * (chart.endMs - chart.startMs);
    const info = rowsAt(ms);
    if (!info) {
      hide();
      return;
    }
    const at = info.ms ?? ms;
    line.setAttribute('x1', chart.x(at));
    line.setAttribute('x2', chart.x(at));
    line.setAttribute('visibility', 'visible');
    tip.replaceChildren();
    const title = document.createElement('div');
    title.className = 'tip-title';
    title.textContent = info.title;
    tip.append(title);
    for (const row of info.rows) {
      const el = document.createElement('div');
      el.className = 'tip-row';
      const sw = document.createElement('i');
      sw.style.background = row.color || 'transparent';
      const label = document.createElement('span');
      label.textContent = row.label;
      const val = document.createElement('b');
      val.textContent = row.value;
      el.append(sw, label, val);
      tip.append(el);
    }
    tip.hidden = false;
    const wr = wrap.getBoundingClientRect();
    const left = ev.clientX - wr.left + 14;
    tip.style.left = `${Math.min(left, wr.width - tip.offsetWidth - 4)}px`;
    tip.style.top = `${Math.max(0, ev.clientY - wr.top - 10)}px`;
  });
}
