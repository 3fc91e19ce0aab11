/**
 * Detector output -> band frames, and anomaly events -> annotation frames.
 *
 * A detector writes `<name>:predicted`, `<name>:lower`, `<name>:upper`, `<name>:anomalous`
 * (0/1) and `<name>:likelihood` (0..1, 0.5 or more unusual) with the source series' labels.
 * Each label set becomes one frame with the actual value (from the detector's source query,
 * when known), the forecast, the band (upper filled down to lower), the anomalous points and,
 * when the server wrote it, the likelihood on a right-hand 0..1 axis.
 */
import { createDataFrame, DataFrame, FieldConfig, FieldType } from '@grafana/data';

import { AnnotationEvent, PromMatrixSeries } from '../api/responses';

const PARTS = ['predicted', 'lower', 'upper', 'anomalous', 'likelihood'] as const;
type Part = (typeof PARTS)[number];

/** A label set without `__name__`, as a stable key and a readable name. */
export function seriesKey(metric: Record<string, string>): string {
  return Object.keys(metric)
    .filter((k) => k !== '__name__')
    .sort()
    .map((k) => `${k}="${metric[k]}"`)
    .join(', ');
}

function parseValue(v: string): number | null {
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

interface Group {
  labels: Record<string, string>;
  parts: Partial<Record<Part | 'actual', Map<number, number | null>>>;
}

/**
 * Band frames of one detector. `bands` is the matrix of the detector's written series,
 * `actual` the matrix of its source query (empty when the detector spec is unavailable).
 */
export function bandFrames(
  detector: string,
  bands: PromMatrixSeries[],
  actual: PromMatrixSeries[],
  refId: string
): DataFrame[] {
  const groups = new Map<string, Group>();
  const groupOf = (metric: Record<string, string>): Group => {
    const key = seriesKey(metric);
    let g = groups.get(key);
    if (!g) {
      const labels = { ...metric };
      delete labels.__name__;
      g = { labels, parts: {} };
      groups.set(key, g);
    }
    return g;
  };
  const toMap = (s: PromMatrixSeries) => new Map(s.values.map(([t, v]) => [Math.round(t * 1000), parseValue(v)]));
  for (const s of bands) {
    const name = s.metric.__name__ ?? '';
    const part = name.startsWith(`${detector}:`) ? (name.slice(detector.length + 1) as Part) : undefined;
    if (part && PARTS.includes(part)) {
      groupOf(s.metric).parts[part] = toMap(s);
    }
  }
  for (const s of actual) {
    const key = seriesKey(s.metric);
    // Only source series the detector covers (it may cap them with max_series).
    if (groups.has(key) || (groups.size === 0 && actual.length === 1)) {
      groupOf(s.metric).parts.actual = toMap(s);
    }
  }
  const frames: DataFrame[] = [];
  for (const [key, g] of [...groups.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const times = new Set<number>();
    Object.values(g.parts).forEach((m) => m?.forEach((_, t) => times.add(t)));
    const ts = [...times].sort((a, b) => a - b);
    const col = (p: Part | 'actual') => ts.map((t) => g.parts[p]?.get(t) ?? null);
    const label = key || detector;
    const name = (p: string) => `${label} ${p}`;
    const actualValues = col('actual');
    const flags = col('anomalous');
    const predictedValues = col('predicted');
    const fields = [
      { name: 'Time', type: FieldType.time, values: ts },
      numberField('value', name('value'), actualValues, g.labels, { custom: { lineWidth: 2 } }),
      numberField('predicted', name('predicted'), predictedValues, g.labels, {
        custom: { lineStyle: { fill: 'dash', dash: [6, 4] }, lineWidth: 1 },
      }),
      numberField('lower', name('lower'), col('lower'), g.labels, {
        custom: { lineWidth: 0, fillOpacity: 0 },
        color: { mode: 'fixed', fixedColor: 'blue' },
      }),
      numberField('upper', name('upper'), col('upper'), g.labels, {
        custom: { lineWidth: 0, fillOpacity: 20, fillBelowTo: name('lower') },
        color: { mode: 'fixed', fixedColor: 'blue' },
      }),
      numberField(
        'anomaly',
        name('anomaly'),
        // Marked on the actual value, or on the forecast when the source series is unknown.
        flags.map((f, i) => (f !== null && f >= 0.5 ? (actualValues[i] ?? predictedValues[i]) : null)),
        g.labels,
        { custom: { drawStyle: 'points', pointSize: 8 }, color: { mode: 'fixed', fixedColor: 'red' } }
      ),
    ];
    if (g.parts.likelihood) {
      fields.push(
        numberField('likelihood', name('likelihood'), col('likelihood'), g.labels, {
          min: 0,
          max: 1,
          custom: { axisPlacement: 'right', lineWidth: 1, fillOpacity: 0 },
          color: { mode: 'fixed', fixedColor: 'orange' },
        })
      );
    }
    frames.push(createDataFrame({ refId, name: label, fields, meta: { preferredVisualisationType: 'graph' } }));
  }
  return frames;
}

function numberField(
  name: string,
  displayName: string,
  values: Array<number | null>,
  labels: Record<string, string>,
  config: FieldConfig
) {
  return { name, type: FieldType.number, values, labels, config: { ...config, displayNameFromDS: displayName } };
}

/** Anomaly events -> a frame Grafana reads as annotations (time, timeEnd, title, text, tags). */
export function annotationFrame(events: AnnotationEvent[], refId: string): DataFrame {
  const sorted = [...events].sort((a, b) => a.time - b.time);
  return createDataFrame({
    refId,
    name: 'anomalies',
    fields: [
      { name: 'time', type: FieldType.time, values: sorted.map((e) => e.time) },
      { name: 'timeEnd', type: FieldType.time, values: sorted.map((e) => e.timeEnd ?? e.time) },
      { name: 'title', type: FieldType.string, values: sorted.map((e) => e.title) },
      { name: 'text', type: FieldType.string, values: sorted.map((e) => e.text) },
      { name: 'tags', type: FieldType.other, values: sorted.map((e) => e.tags ?? []) },
    ],
  });
}
