/** Plugin entry point: registers the datasource and its editors with Grafana. */
import { DataSourcePlugin } from '@grafana/data';

import { ConfigEditor } from './components/ConfigEditor';
import { QueryEditor } from './components/QueryEditor';
import { DataSource } from './datasource';
import { SightlineOptions, SightlineQuery } from './types';

export const plugin = new DataSourcePlugin<DataSource, SightlineQuery, SightlineOptions>(DataSource)
  .setConfigEditor(ConfigEditor)
  .setQueryEditor(QueryEditor);
