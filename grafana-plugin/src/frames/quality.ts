/**
 * `/api/v1/quality` answers -> one time-series frame per group (model, provider, route, ...).
 */
import { createDataFrame, DataFrame, FieldType } from '@grafana/data';

import { QualityResponse } from '../api/responses';

/** Display unit per quality metric (Grafana unit ids). */
const UNITS: Record<string, string> = {
  token_entropy_mean: 'none',
  hallucination_index: 'percentunit',
  low_confidence_tokens: 'short',
  context_expansion: 'none',
  cache_hit_ratio: 'percentunit',
};

export function qualityFrames(resp: QualityResponse, refId: string): DataFrame[] {
  return resp.series.map((s) =>
    createDataFrame({
      refId,
      name: s.group,
      fields: [
        { name: 'Time', type: FieldType.time, values: s.points.map((p) => p[0]) },
        {
          name: resp.metric,
          type: FieldType.number,
          values: s.points.map((p) => p[1]),
          labels: { [resp.by]: s.group },
          config: { displayNameFromDS: s.group, unit: UNITS[resp.metric] },
        },
      ],
    })
  );
}
