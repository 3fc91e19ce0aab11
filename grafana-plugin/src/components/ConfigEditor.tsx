/**
 * Datasource settings: Sightline's URL, the bearer token (kept in secureJsonData, injected by
 * Grafana's proxy) and, with auth off, the tenant sent as `X-Scope-OrgID`.
 */
import React from 'react';
import { DataSourcePluginOptionsEditorProps } from '@grafana/data';
import { InlineField, Input, SecretInput, Stack } from '@grafana/ui';

import { SightlineOptions, SightlineSecureJsonData } from '../types';

type Props = DataSourcePluginOptionsEditorProps<SightlineOptions, SightlineSecureJsonData>;

export function ConfigEditor({ options, onOptionsChange }: Props) {
  const secure = options.secureJsonData ?? {};
  return (
    <Stack direction="column" gap={1}>
      <InlineField label="URL" labelWidth={18} tooltip="Sightline's HTTP address, e.g. http://sightline:4318" required>
        <Input
          aria-label="URL"
          width={48}
          placeholder="http://localhost:4318"
          value={options.url}
          onChange={(e) => onOptionsChange({ ...options, url: e.currentTarget.value.trim(), access: 'proxy' })}
        />
      </InlineField>
      <InlineField label="Bearer token" labelWidth={18} tooltip="When Sightline runs with --auth-tokens-file">
        <SecretInput
          aria-label="Bearer token"
          width={48}
          isConfigured={Boolean(options.secureJsonFields?.token)}
          value={secure.token ?? ''}
          placeholder="token of a tenant"
          onChange={(e) =>
            onOptionsChange({ ...options, secureJsonData: { ...secure, token: e.currentTarget.value } })
          }
          onReset={() =>
            onOptionsChange({
              ...options,
              secureJsonFields: { ...options.secureJsonFields, token: false },
              secureJsonData: { ...secure, token: '' },
            })
          }
        />
      </InlineField>
      <InlineField label="Tenant" labelWidth={18} tooltip="X-Scope-OrgID, when Sightline runs with auth off; empty for the default tenant">
        <Input
          aria-label="Tenant"
          width={32}
          placeholder="default"
          value={options.jsonData.tenant ?? ''}
          onChange={(e) =>
            onOptionsChange({ ...options, jsonData: { ...options.jsonData, tenant: e.currentTarget.value.trim() || undefined } })
          }
        />
      </InlineField>
    </Stack>
  );
}
