/**
 * `/api/v1/quality/tokens` -> one row per token, coloured by entropy.
 *
 * Entropy is in nats; the table colours each row (so each token) by it.
 * The thresholds colour a token green when the model was sure (under 0.5),
 * orange when it hesitated, red from 1.5 (about four or more equally likely choices).
 */
import { createDataFrame, DataFrame, FieldColorModeId, FieldType, ThresholdsMode } from '@grafana/data';

import { TokensResponse } from '../api/responses';

/** Entropy thresholds (nats) for the colours; exported for the tests and the docs. */
export const ENTROPY_THRESHOLDS = { hesitant: 0.5, uncertain: 1.5 };

export function tokensFrame(resp: TokensResponse, refId: string): DataFrame {
  const t = resp.tokens;
  const colour = {
    color: { mode: FieldColorModeId.Thresholds },
    thresholds: {
      mode: ThresholdsMode.Absolute,
      steps: [
        { value: -Infinity, color: 'green' },
        { value: ENTROPY_THRESHOLDS.hesitant, color: 'orange' },
        { value: ENTROPY_THRESHOLDS.uncertain, color: 'red' },
      ],
    },
    // The whole row (the token with it) takes the colour of its entropy.
    custom: { cellOptions: { type: 'color-background', applyToRow: true } },
  };
  return createDataFrame({
    refId,
    name: `tokens ${resp.span_id}`,
    meta: {
      preferredVisualisationType: 'table',
      custom: {
        model: resp.model,
        entropyMean: resp.entropy_mean,
        hallucinationIndex: resp.hallucination_index,
      },
    },
    fields: [
      { name: 'position', type: FieldType.number, values: t.map((_, i) => i) },
      { name: 'token', type: FieldType.string, values: t.map((x) => x.token), },
      { name: 'logprob', type: FieldType.number, values: t.map((x) => x.logprob), config: { decimals: 3 } },
      {
        name: 'probability',
        type: FieldType.number,
        values: t.map((x) => Math.exp(x.logprob)),
        config: { unit: 'percentunit', min: 0, max: 1 },
      },
      { name: 'entropy', type: FieldType.number, values: t.map((x) => x.entropy), config: { ...colour, unit: 'none', decimals: 3 } },
      {
        name: 'alternatives',
        type: FieldType.string,
        values: t.map((x) =>
          x.top
            .filter((a) => a.token !== x.token)
            .map((a) => `${JSON.stringify(a.token)} ${(Math.exp(a.logprob) * 100).toFixed(1)}%`)
            .join(', ')
        ),
      },
    ],
  });
}
