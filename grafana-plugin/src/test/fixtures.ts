/**
 * Loads a test fixture: a recording from a real server (`__fixtures__/recorded/<name>.json`)
 * when there is one, else the hand-written contract fixture of the same name.
 */
import fs from 'fs';
import path from 'path';

import { ApiRequest } from '../api/requests';

export interface Fixture<T = unknown> {
  request: ApiRequest;
  status: number;
  body: T;
  /** `recorded` (from a real server) or `contract` (hand-written from the HTTP contract). */
  source: 'recorded' | 'contract';
}

const ROOT = path.resolve(__dirname, '..', '__fixtures__');

export function fixture<T = unknown>(name: string): Fixture<T> {
  for (const source of ['recorded', 'contract'] as const) {
    const file = path.join(ROOT, source, `${name}.json`);
    if (fs.existsSync(file)) {
      return { ...JSON.parse(fs.readFileSync(file, 'utf8')), source };
    }
  }
  throw new Error(`no fixture named ${name}`);
}
