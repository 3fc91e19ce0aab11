/**
 * The Sightline datasource: Grafana's entry points (query, health check, variables,
 * annotations) on top of the runner, talking to Sightline through Grafana's datasource proxy.
 *
 * Requests go to `<proxy url>/sightline/...`: the `sightline` route in plugin.json forwards them
 * to the configured URL and adds `Authorization: Bearer <token>` from secureJsonData, so the
 * token never reaches the browser. The tenant (auth off) is sent as `X-Scope-OrgID`.
 */
import {
  CoreApp,
  DataFrame,
  DataQueryRequest,
  DataQueryResponse,
  DataSourceApi,
  DataSourceInstanceSettings,
  MetricFindValue,
  ScopedVars,
  TestDataSourceResponse,
} from '@grafana/data';
import { FetchError, getBackendSrv, getTemplateSrv } from '@grafana/runtime';
import { lastValueFrom } from 'rxjs';

import { ApiRequest, buildInfoRequest } from './api/requests';
import { errorMessage, unwrap } from './api/responses';
import { HttpError } from './api/transport';
import { runQuery } from './runner';
import { DEFAULT_QUERY, QueryType, SightlineOptions, SightlineQuery } from './types';
import { variableValues } from './variables';

/** Query fields that may hold `$variables`. */
const TEMPLATED: Array<keyof SightlineQuery> = [
  'metric',
  'by',
  'service',
  'model',
  'provider',
  'operation',
  'step',
  'detector',
  'minDuration',
  'traceql',
  'traceId',
  'spanId',
];

export class DataSource extends DataSourceApi<SightlineQuery, SightlineOptions> {
  readonly baseUrl: string;
  readonly tenant?: string;

  constructor(instanceSettings: DataSourceInstanceSettings<SightlineOptions>) {
    super(instanceSettings);
    this.baseUrl = `${instanceSettings.url ?? ''}/sightline`;
    this.tenant = instanceSettings.jsonData.tenant?.trim() || undefined;
    // Anomaly events as annotations, edited with the normal query editor.
    this.annotations = {
      getDefaultQuery: () => ({ queryType: QueryType.AnomalyEvents }),
    };
  }

  getDefaultQuery(_app: CoreApp): Partial<SightlineQuery> {
    return DEFAULT_QUERY;
  }

  filterQuery(q: SightlineQuery): boolean {
    return !q.hide;
  }

  applyTemplateVariables(q: SightlineQuery, scopedVars: ScopedVars): SightlineQuery {
    const t = getTemplateSrv();
    const out: SightlineQuery = { ...q };
    for (const k of TEMPLATED) {
      const v = q[k];
      if (typeof v === 'string') {
        (out as unknown as Record<string, unknown>)[k] = t.replace(v, scopedVars);
      }
    }
    const list = (xs?: string[]) => xs?.map((x) => t.replace(x, scopedVars));
    out.causes = list(q.causes);
    out.effects = list(q.effects);
    out.attrs = list(q.attrs);
    return out;
  }

  async query(options: DataQueryRequest<SightlineQuery>): Promise<DataQueryResponse> {
    const range = { fromMs: options.range.from.valueOf(), toMs: options.range.to.valueOf() };
    const ctx = {
      range,
      intervalMs: options.intervalMs,
      send: (r: ApiRequest) => this.send(r),
      ds: { uid: this.uid, name: this.name },
    };
    const targets = options.targets.filter((q) => this.filterQuery(q));
    const results = await Promise.allSettled(
      targets.map((q) => runQuery(this.applyTemplateVariables(q, options.scopedVars), ctx))
    );
    const data: DataFrame[] = [];
    const errors: Array<{ refId: string; message: string }> = [];
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') {
        data.push(...r.value);
      } else {
        errors.push({ refId: targets[i].refId, message: r.reason?.message ?? String(r.reason) });
      }
    });
    return { data, errors: errors.length ? errors : undefined, error: errors[0] };
  }

  /** Sends one request through the datasource proxy; non-2xx answers become `HttpError`. */
  async send(req: ApiRequest): Promise<unknown> {
    const headers: Record<string, string> = {};
    if (this.tenant) {
      headers['X-Scope-OrgID'] = this.tenant;
    }
    try {
      const res = await lastValueFrom(
        getBackendSrv().fetch<unknown>({
          url: `${this.baseUrl}${req.path}`,
          method: req.method,
          params: req.params,
          data: req.data,
          headers,
          showErrorAlert: false,
        })
      );
      return res.data;
    } catch (e) {
      const fe = e as FetchError;
      if (fe && typeof fe.status === 'number') {
        const msg = errorMessage(fe.data) ?? fe.statusText ?? `HTTP ${fe.status}`;
        throw new HttpError(fe.status, `Sightline answered ${fe.status}: ${msg}`);
      }
      throw e;
    }
  }

  async testDatasource(): Promise<TestDataSourceResponse> {
    try {
      const info = unwrap<{ revision?: string; version?: string }>(await this.send(buildInfoRequest()));
      const tenant = this.tenant ? ` (tenant ${this.tenant})` : '';
      return { status: 'success', message: `Connected to Sightline ${info.revision ?? info.version ?? ''}${tenant}`.trim() };
    } catch (e) {
      if (e instanceof HttpError && e.status === 401) {
        return {
          status: 'error',
          message: 'Sightline refused the credentials (401): set the bearer token of a tenant in the datasource settings',
        };
      }
      if (e instanceof HttpError && e.status === 400) {
        return { status: 'error', message: `Sightline refused the request: ${e.message} (check the tenant)` };
      }
      const msg = e instanceof Error ? e.message : String(e);
      return { status: 'error', message: `Cannot reach Sightline at the configured URL: ${msg}` };
    }
  }

  async metricFindQuery(query: string | { query?: string }): Promise<MetricFindValue[]> {
    const text = typeof query === 'string' ? query : (query?.query ?? '');
    return variableValues(getTemplateSrv().replace(text), (r) => this.send(r));
  }
}
