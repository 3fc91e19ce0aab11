/**
 * What Grafana's datasource proxy does for this plugin, reproduced for the contract test: a
 * `backendSrv.fetch` that takes `<ds url>/<route path>/...`, applies the route of plugin.json
 * (its URL and headers, with `{{ .URL }}`, `{{ .JsonData.x }}` and `{{ .SecureJsonData.x }}`
 * filled in) and sends the request with real `fetch`. Errors come back shaped like Grafana's
 * `FetchError` (status, statusText, data).
 */
import { from, Observable } from 'rxjs';

import { queryString } from '../api/requests';
import pluginJson from '../plugin.json';

/** The datasource URL the proxied DataSource is given (Grafana's proxy prefix). */
export const PROXY_PREFIX = '/api/datasources/proxy/uid/sightline-contract';

export interface ProxySettings {
  url: string;
  jsonData?: Record<string, string>;
  secureJsonData?: Record<string, string>;
}

interface FetchOptions {
  url: string;
  method?: string;
  params?: Record<string, string | number | string[]>;
  data?: unknown;
  headers?: Record<string, string>;
}

function fill(template: string, s: ProxySettings): string {
  return template
    .replace(/\{\{\s*\.URL\s*\}\}/g, s.url)
    .replace(/\{\{\s*\.JsonData\.(\w+)\s*\}\}/g, (_, k) => s.jsonData?.[k] ?? '')
    .replace(/\{\{\s*\.SecureJsonData\.(\w+)\s*\}\}/g, (_, k) => s.secureJsonData?.[k] ?? '');
}

/** Every request made, for assertions on what the plugin sent. */
export interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export function proxiedBackendSrv(settings: ProxySettings, sent: Sent[] = []) {
  const doFetch = async (o: FetchOptions) => {
    const route = pluginJson.routes.find((r) => o.url.startsWith(`${PROXY_PREFIX}/${r.path}/`));
    if (!route) {
      throw new Error(`no plugin.json route matches ${o.url}`);
    }
    const rest = o.url.slice(`${PROXY_PREFIX}/${route.path}`.length);
    const url = `${fill(route.url, settings)}${rest}${queryString(o.params)}`;
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    for (const h of route.headers ?? []) {
      headers[h.name] = fill(h.content, settings);
    }
    let body: string | undefined;
    if (o.data !== undefined) {
      body = JSON.stringify(o.data);
      headers['Content-Type'] = 'application/json';
    }
    const method = o.method ?? 'GET';
    sent.push({ method, url, headers, body });
    const r = await fetch(url, { method, headers, body });
    const text = await r.text();
    let data: unknown = text;
    try {
      data = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    if (!r.ok) {
      throw { status: r.status, statusText: r.statusText, data };
    }
    return { data, status: r.status, ok: true };
  };
  return {
    fetch: (o: FetchOptions): Observable<unknown> => from(doFetch(o)),
  };
}
