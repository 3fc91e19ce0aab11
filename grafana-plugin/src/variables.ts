/**
 * Template variables: `models()`, `providers()`, `operations()`, `services()`, `routes()`,
 * `detectors()` (the parentheses are optional).
 *
 * Values come from `/api/v1/quality/values`; on a server without it (404) the same values are
 * read from the Tempo tag-values API, which every Sightline serves.
 */
import { MetricFindValue } from '@grafana/data';

import { detectorsRequest, qualityValuesRequest, QueryError, tagValuesRequest } from './api/requests';
import { Detector, unwrap } from './api/responses';
import { isNotFound, Transport } from './api/transport';

/** Variable kind -> (`/api/v1/quality/values` field, span attribute behind it). */
const FIELDS: Record<string, [string, string]> = {
  models: ['model', 'gen_ai.request.model'],
  providers: ['provider', 'gen_ai.provider.name'],
  operations: ['operation', 'gen_ai.operation.name'],
  services: ['service', 'service.name'],
  routes: ['route', 'app.route'],
};

export const VARIABLE_KINDS = [...Object.keys(FIELDS), 'detectors'];

/** `models()` -> `models`; anything else is a `QueryError` listing what is understood. */
export function parseVariableQuery(query: string): string {
  const m = /^\s*([a-z]+)\s*(\(\s*\))?\s*$/i.exec(query ?? '');
  const kind = m?.[1].toLowerCase();
  if (!kind || !VARIABLE_KINDS.includes(kind)) {
    throw new QueryError(`unknown variable query "${query}"; use one of ${VARIABLE_KINDS.map((k) => `${k}()`).join(', ')}`);
  }
  return kind;
}

export async function variableValues(query: string, send: Transport): Promise<MetricFindValue[]> {
  const kind = parseVariableQuery(query);
  let values: string[];
  if (kind === 'detectors') {
    const body = unwrap<{ detectors: Detector[] }>(await send(detectorsRequest()));
    values = body.detectors.map((d) => d.name);
  } else {
    const [field, tag] = FIELDS[kind];
    try {
      values = unwrap<{ values: string[] }>(await send(qualityValuesRequest(field))).values;
    } catch (e) {
      if (!isNotFound(e)) {
        throw e;
      }
      values = unwrap<{ tagValues: string[] }>(await send(tagValuesRequest(tag))).tagValues;
    }
  }
  return [...new Set(values.filter((v) => v !== ''))].sort().map((text) => ({ text, value: text }));
}
