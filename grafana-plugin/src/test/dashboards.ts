/**
 * The provisioned dashboards and datasources, read for the tests: every panel target with the
 * dashboard and panel it belongs to, and template variables substituted with sample values.
 */
import fs from 'fs';
import path from 'path';

import { SightlineQuery } from '../types';

const PROVISIONING = path.resolve(__dirname, '..', '..', 'provisioning');

export interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query: string; datasource?: { uid: string } }> };
  annotations: { list: Array<{ name: string; datasource: { type: string; uid: string }; target?: SightlineQuery }> };
}

export interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource: { type: string; uid: string };
  targets: Array<Record<string, unknown> & { refId: string; datasource: { type: string; uid: string } }>;
}

export function dashboards(): Array<{ file: string; dashboard: Dashboard }> {
  const dir = path.join(PROVISIONING, 'dashboards');
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, dashboard: JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as Dashboard }));
}

/** `uid -> type` of the provisioned datasources (the YAML is flat enough to read by line). */
export function provisionedDatasources(): Map<string, string> {
  const yaml = fs.readFileSync(path.join(PROVISIONING, 'datasources', 'sightline.yaml'), 'utf8');
  const out = new Map<string, string>();
  let uid: string | undefined;
  for (const line of yaml.split('\n')) {
    const u = /^\s{4}uid:\s*(\S+)/.exec(line);
    const t = /^\s{4}type:\s*(\S+)/.exec(line);
    if (/^\s{2}- name:/.test(line)) {
      uid = undefined;
    }
    if (u) {
      uid = u[1];
    }
    if (t && uid) {
      out.set(uid, t[1]);
    }
  }
  return out;
}

/** Replaces `$var`, `${var}` and `${var:format}` in every string (and string list) of a target. */
export function substitute<T extends object>(target: T, vars: Record<string, string>): T {
  const rep = (s: string) => s.replace(/\$\{(\w+)(?::\w+)?\}|\$(\w+)/g, (m, a, b) => vars[a ?? b] ?? m);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(target)) {
    out[k] = typeof v === 'string' ? rep(v) : Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? rep(x) : x)) : v;
  }
  return out as T;
}
