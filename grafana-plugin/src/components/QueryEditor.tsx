/**
 * Query editor: a query type, then the fields of that type. Every change runs the query.
 */
import React from 'react';
import { QueryEditorProps } from '@grafana/data';
import { InlineField, InlineFieldRow, RadioButtonGroup, Stack } from '@grafana/ui';

import { DataSource } from '../datasource';
import { QUALITY_METRICS, QueryType, SightlineOptions, SightlineQuery } from '../types';
import { ListField, NumberField, TextField } from './fields';

type Props = QueryEditorProps<DataSource, SightlineQuery, SightlineOptions>;

export const QUERY_TYPES = [
  { label: 'LLM quality', value: QueryType.Quality },
  { label: 'Anomalies', value: QueryType.Anomalies },
  { label: 'Anomaly events', value: QueryType.AnomalyEvents },
  { label: 'Granger', value: QueryType.Granger },
  { label: 'Trace search', value: QueryType.TraceSearch },
  { label: 'Trace', value: QueryType.Trace },
  { label: 'Tokens', value: QueryType.Tokens },
];

const METRIC_LABELS: Record<string, string> = {
  token_entropy_mean: 'Entropy',
  hallucination_index: 'Hallucination',
  low_confidence_tokens: 'Low-confidence tokens',
  context_expansion: 'Context expansion',
  cache_hit_ratio: 'Cache hits',
};

export function QueryEditor({ query, onChange, onRunQuery }: Props) {
  const type = query.queryType ?? QueryType.Quality;
  const set = (patch: Partial<SightlineQuery>) => {
    onChange({ ...query, ...patch });
    onRunQuery();
  };
  return (
    <Stack direction="column" gap={0.5}>
      <InlineFieldRow>
        <InlineField label="Query type" labelWidth={16}>
          <RadioButtonGroup options={QUERY_TYPES} value={type} onChange={(v) => set({ queryType: v })} />
        </InlineField>
      </InlineFieldRow>
      {type === QueryType.Quality && <QualityFields query={query} set={set} />}
      {(type === QueryType.Anomalies || type === QueryType.AnomalyEvents) && (
        <InlineFieldRow>
          <TextField
            label="Detector"
            tooltip="Name of a detector (POST /api/v1/detectors); a template variable from detectors() works"
            value={query.detector}
            onCommit={(detector) => set({ detector })}
          />
          {type === QueryType.Anomalies && (
            <TextField label="Step" placeholder="auto" width={10} value={query.step} onCommit={(step) => set({ step })} />
          )}
        </InlineFieldRow>
      )}
      {type === QueryType.Granger && <GrangerFields query={query} set={set} />}
      {type === QueryType.TraceSearch && <TraceSearchFields query={query} set={set} />}
      {(type === QueryType.Trace || type === QueryType.Tokens) && (
        <InlineFieldRow>
          <TextField label="Trace ID" width={40} value={query.traceId} onCommit={(traceId) => set({ traceId })} />
          {type === QueryType.Tokens && (
            <TextField label="Span ID" width={20} value={query.spanId} onCommit={(spanId) => set({ spanId })} />
          )}
        </InlineFieldRow>
      )}
    </Stack>
  );
}

interface FieldsProps {
  query: SightlineQuery;
  set: (patch: Partial<SightlineQuery>) => void;
}

function QualityFields({ query, set }: FieldsProps) {
  return (
    <>
      <InlineFieldRow>
        <InlineField label="Metric" labelWidth={16}>
          <RadioButtonGroup
            options={QUALITY_METRICS.map((m) => ({ label: METRIC_LABELS[m], value: m, description: m }))}
            value={query.metric ?? 'hallucination_index'}
            onChange={(metric) => set({ metric })}
          />
        </InlineField>
      </InlineFieldRow>
      <InlineFieldRow>
        <TextField
          label="Group by"
          tooltip="model, provider, operation, service, route or attr.<key>"
          width={20}
          value={query.by ?? 'model'}
          onCommit={(by) => set({ by })}
        />
        <TextField label="Step" placeholder="auto" width={10} value={query.step} onCommit={(step) => set({ step })} />
      </InlineFieldRow>
      <InlineFieldRow>
        <TextField label="Service" width={20} value={query.service} onCommit={(service) => set({ service })} />
        <TextField label="Model" width={20} value={query.model} onCommit={(model) => set({ model })} />
        <TextField label="Provider" width={20} value={query.provider} onCommit={(provider) => set({ provider })} />
      </InlineFieldRow>
    </>
  );
}

function GrangerFields({ query, set }: FieldsProps) {
  return (
    <>
      <ListField
        label="Causes"
        tooltip="PromQL, one per line; each must give exactly one series"
        placeholder="avg(hallucination_index)"
        value={query.causes}
        onCommit={(causes) => set({ causes })}
      />
      <ListField
        label="Effects"
        tooltip="PromQL, one per line; every cause is tested against every effect"
        placeholder="sum(rate(conversions_total[5m]))"
        value={query.effects}
        onCommit={(effects) => set({ effects })}
      />
      <InlineFieldRow>
        <NumberField label="Max lag" placeholder="6" value={query.maxLag} onCommit={(maxLag) => set({ maxLag })} />
        <TextField label="Step" placeholder="auto" width={10} value={query.step} onCommit={(step) => set({ step })} />
      </InlineFieldRow>
    </>
  );
}

function TraceSearchFields({ query, set }: FieldsProps) {
  return (
    <>
      <InlineFieldRow>
        <TextField label="Service" width={20} value={query.service} onCommit={(service) => set({ service })} />
        <TextField label="Model" width={20} value={query.model} onCommit={(model) => set({ model })} />
        <TextField label="Provider" width={20} value={query.provider} onCommit={(provider) => set({ provider })} />
        <TextField label="Operation" width={20} value={query.operation} onCommit={(operation) => set({ operation })} />
      </InlineFieldRow>
      <InlineFieldRow>
        <InlineField label="Status" labelWidth={16}>
          <RadioButtonGroup
            options={[
              { label: 'any', value: '' as const },
              { label: 'error', value: 'error' as const },
              { label: 'ok', value: 'ok' as const },
              { label: 'unset', value: 'unset' as const },
            ]}
            value={query.status ?? ''}
            onChange={(status) => set({ status: status || undefined })}
          />
        </InlineField>
        <TextField label="Min duration" placeholder="2s" width={10} value={query.minDuration} onCommit={(minDuration) => set({ minDuration })} />
      </InlineFieldRow>
      <InlineFieldRow>
        <NumberField
          label="Min hallucination"
          placeholder="0.5"
          value={query.minHallucination}
          onCommit={(minHallucination) => set({ minHallucination })}
        />
        <NumberField
          label="Min entropy"
          tooltip="mean token entropy, nats"
          value={query.minEntropyMean}
          onCommit={(minEntropyMean) => set({ minEntropyMean })}
        />
        <NumberField label="Limit" placeholder="50" value={query.limit} onCommit={(limit) => set({ limit })} />
      </InlineFieldRow>
      <ListField
        label="Attributes"
        tooltip="key=value, key!=value, key=~regex or key!~regex, one per line"
        placeholder="user.tier=pro"
        value={query.attrs}
        onCommit={(attrs) => set({ attrs })}
      />
      <TextField
        label="TraceQL"
        tooltip="A TraceQL filter ANDed with the fields above"
        width={60}
        value={query.traceql}
        onCommit={(traceql) => set({ traceql })}
      />
    </>
  );
}
