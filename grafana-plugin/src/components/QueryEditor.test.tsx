import React from 'react';
import { render, screen } from '@testing-library/react';
import userEventLib from '@testing-library/user-event';

import { DataSource } from '../datasource';
import { QueryType, SightlineQuery } from '../types';
import { QueryEditor } from './QueryEditor';

jest.mock('@grafana/runtime', () => ({
  getBackendSrv: () => ({ fetch: jest.fn() }),
  getTemplateSrv: () => ({ replace: (s: string) => s }),
}));

// No delay between keystrokes: the tests check what is committed, not typing speed.
const userEvent = userEventLib.setup({ delay: null });

function setup(query: SightlineQuery) {
  const onChange = jest.fn();
  const onRunQuery = jest.fn();
  const utils = render(
    <QueryEditor datasource={{} as DataSource} query={query} onChange={onChange} onRunQuery={onRunQuery} />
  );
  return { onChange, onRunQuery, ...utils };
}

describe('QueryEditor', () => {
  it('shows the quality fields by default and switches query type', async () => {
    const { onChange, onRunQuery } = setup({ refId: 'A' });
    expect(screen.getByRole('radio', { name: 'Hallucination' })).toBeChecked();
    expect(screen.getByLabelText('Group by')).toHaveValue('model');
    await userEvent.click(screen.getByRole('radio', { name: 'Granger' }));
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', queryType: QueryType.Granger });
    expect(onRunQuery).toHaveBeenCalledTimes(1);
  });

  it('commits quality filters on blur, trimmed, and clears empty ones', async () => {
    const { onChange } = setup({ refId: 'A', queryType: QueryType.Quality, model: 'gpt-4o' });
    await userEvent.click(screen.getByRole('radio', { name: 'Entropy' }));
    expect(onChange).toHaveBeenLastCalledWith(expect.objectContaining({ metric: 'token_entropy_mean' }));
    const by = screen.getByLabelText('Group by');
    await userEvent.clear(by);
    await userEvent.type(by, ' attr.app.tenant ');
    expect(onChange).toHaveBeenCalledTimes(1); // nothing until blur
    await userEvent.tab();
    expect(onChange).toHaveBeenLastCalledWith(expect.objectContaining({ by: 'attr.app.tenant' }));
    await userEvent.clear(screen.getByLabelText('Model'));
    await userEvent.tab();
    expect(onChange).toHaveBeenLastCalledWith(expect.objectContaining({ model: undefined }));
  });

  it('edits Granger causes and effects one per line', async () => {
    const { onChange } = setup({ refId: 'A', queryType: QueryType.Granger, causes: ['avg(hallucination_index)'] });
    expect(screen.getByLabelText('Causes')).toHaveValue('avg(hallucination_index)');
    await userEvent.type(screen.getByLabelText('Effects'), 'sum(conversions)\n\n  avg(csat) ');
    await userEvent.tab();
    expect(onChange).toHaveBeenLastCalledWith(expect.objectContaining({ effects: ['sum(conversions)', 'avg(csat)'] }));
    await userEvent.type(screen.getByLabelText('Max lag'), '4');
    await userEvent.tab();
    expect(onChange).toHaveBeenLastCalledWith(expect.objectContaining({ maxLag: 4 }));
  });

  it('edits trace search filters', async () => {
    const { onChange } = setup({ refId: 'A', queryType: QueryType.TraceSearch });
    await userEvent.click(screen.getByRole('radio', { name: 'error' }));
    expect(onChange).toHaveBeenLastCalledWith(expect.objectContaining({ status: 'error' }));
    await userEvent.type(screen.getByLabelText('Min hallucination'), '0.5');
    await userEvent.tab();
    expect(onChange).toHaveBeenLastCalledWith(expect.objectContaining({ minHallucination: 0.5 }));
    await userEvent.type(screen.getByLabelText('Attributes'), 'user.tier=pro');
    await userEvent.tab();
    expect(onChange).toHaveBeenLastCalledWith(expect.objectContaining({ attrs: ['user.tier=pro'] }));
  });

  it('shows only the fields of the chosen type', () => {
    const { rerender } = setup({ refId: 'A', queryType: QueryType.Tokens });
    expect(screen.getByLabelText('Trace ID')).toBeInTheDocument();
    expect(screen.getByLabelText('Span ID')).toBeInTheDocument();
    expect(screen.queryByLabelText('Detector')).not.toBeInTheDocument();
    rerender(
      <QueryEditor
        datasource={{} as DataSource}
        query={{ refId: 'A', queryType: QueryType.Anomalies, detector: 'latency_guard' }}
        onChange={jest.fn()}
        onRunQuery={jest.fn()}
      />
    );
    expect(screen.getByLabelText('Detector')).toHaveValue('latency_guard');
    expect(screen.queryByLabelText('Span ID')).not.toBeInTheDocument();
  });
});
