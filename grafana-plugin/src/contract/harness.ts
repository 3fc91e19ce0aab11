/**
 * Shared set-up of the contract tests: the binary check (skip with a printed reason only when
 * it is absent and not required), a proxied `DataSource` bound to a real server, and the query
 * range covering the workload.
 */
import fs from 'fs';
import { dateTime, DataQueryRequest, DataSourceInstanceSettings, FieldType } from '@grafana/data';

import { DataSource } from '../datasource';
import { SightlineOptions, SightlineQuery } from '../types';
import { RANGE } from './otlp';
import { binaryPath, binaryRequired } from './server';

/** Whether the contract tests can run; prints why not when they cannot. */
export function binaryAvailable(): boolean {
  if (fs.existsSync(binaryPath())) {
    return true;
  }
  if (binaryRequired()) {
    throw new Error(`SIGHTLINE_REQUIRE_BINARY=1 but ${binaryPath()} does not exist (build it with cargo build -p sightline)`);
  }
  // eslint-disable-next-line no-console
  console.log(`contract tests skipped: no sightline binary at ${binaryPath()} (set SIGHTLINE_BIN, or SIGHTLINE_REQUIRE_BINARY=1 to fail)`);
  return false;
}

export function dataSource(jsonData: SightlineOptions = {}): DataSource {
  const settings = {
    id: 1,
    uid: 'sightline-contract',
    type: 'sightline-llm-datasource',
    name: 'Sightline',
    url: '/api/datasources/proxy/uid/sightline-contract',
    jsonData,
    meta: {},
    readOnly: true,
    access: 'proxy',
  } as unknown as DataSourceInstanceSettings<SightlineOptions>;
  return new DataSource(settings);
}

export { RANGE };

export function request(targets: SightlineQuery[], intervalMs = 60_000): DataQueryRequest<SightlineQuery> {
  const from = dateTime(RANGE.fromMs);
  const to = dateTime(RANGE.toMs);
  return {
    requestId: 'contract',
    interval: `${intervalMs / 1000}s`,
    intervalMs,
    range: { from, to, raw: { from, to } },
    scopedVars: {},
    targets,
    timezone: 'utc',
    app: 'dashboard',
    startTime: 0,
  } as DataQueryRequest<SightlineQuery>;
}

export { FieldType };
