/**
 * Small editor inputs that commit on blur (so a panel does not re-run on every keystroke):
 * text, number, and a one-item-per-line list.
 */
import React from 'react';
import { InlineField, Input, TextArea } from '@grafana/ui';

interface Common {
  label: string;
  tooltip?: string;
  width?: number;
  placeholder?: string;
}

export function TextField(props: Common & { value?: string; onCommit: (v: string | undefined) => void }) {
  const { label, tooltip, width = 24, placeholder, value, onCommit } = props;
  return (
    <InlineField label={label} tooltip={tooltip} labelWidth={16}>
      <Input
        aria-label={label}
        width={width}
        placeholder={placeholder}
        defaultValue={value ?? ''}
        onBlur={(e) => {
          const v = e.currentTarget.value.trim();
          if (v !== (value ?? '')) {
            onCommit(v || undefined);
          }
        }}
      />
    </InlineField>
  );
}

export function NumberField(props: Common & { value?: number; onCommit: (v: number | undefined) => void }) {
  const { label, tooltip, width = 12, placeholder, value, onCommit } = props;
  return (
    <InlineField label={label} tooltip={tooltip} labelWidth={16}>
      <Input
        aria-label={label}
        type="number"
        width={width}
        placeholder={placeholder}
        defaultValue={value ?? ''}
        onBlur={(e) => {
          const raw = e.currentTarget.value.trim();
          const v = raw === '' ? undefined : Number(raw);
          if (v !== value && (v === undefined || Number.isFinite(v))) {
            onCommit(v);
          }
        }}
      />
    </InlineField>
  );
}

export function ListField(props: Common & { value?: string[]; onCommit: (v: string[]) => void }) {
  const { label, tooltip, placeholder, value, onCommit } = props;
  return (
    <InlineField label={label} tooltip={tooltip} labelWidth={16} grow>
      <TextArea
        aria-label={label}
        rows={Math.max(2, (value?.length ?? 0) + 1)}
        placeholder={placeholder}
        defaultValue={(value ?? []).join('\n')}
        onBlur={(e) => {
          const v = e.currentTarget.value
            .split('\n')
            .map((s) => s.trim())
            .filter(Boolean);
          if (v.join('\n') !== (value ?? []).join('\n')) {
            onCommit(v);
          }
        }}
      />
    </InlineField>
  );
}
