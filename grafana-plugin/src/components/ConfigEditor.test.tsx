import React from 'react';
import { render, screen } from '@testing-library/react';
import userEventLib from '@testing-library/user-event';
import { DataSourceSettings } from '@grafana/data';

import { SightlineOptions, SightlineSecureJsonData } from '../types';
import { ConfigEditor } from './ConfigEditor';

type Settings = DataSourceSettings<SightlineOptions, SightlineSecureJsonData>;

// No delay between keystrokes: the tests check what is committed, not typing speed.
const userEvent = userEventLib.setup({ delay: null });

function setup(overrides: Partial<Settings> = {}) {
  const options = { url: '', jsonData: {}, secureJsonFields: {}, ...overrides } as Settings;
  const onOptionsChange = jest.fn();
  render(<ConfigEditor options={options} onOptionsChange={onOptionsChange} />);
  return onOptionsChange;
}

describe('ConfigEditor', () => {
  it('stores the URL as a proxied datasource URL', async () => {
    const onOptionsChange = setup();
    await userEvent.type(screen.getByLabelText('URL'), 'h');
    expect(onOptionsChange).toHaveBeenLastCalledWith(expect.objectContaining({ url: 'h', access: 'proxy' }));
  });

  it('keeps the token in secureJsonData only', async () => {
    const onOptionsChange = setup();
    await userEvent.type(screen.getByLabelText('Bearer token'), 's');
    const last = onOptionsChange.mock.calls.at(-1)[0] as Settings;
    expect(last.secureJsonData).toEqual({ token: 's' });
    expect(last.jsonData).toEqual({});
  });

  it('shows a configured token as set and resets it', async () => {
    const onOptionsChange = setup({ secureJsonFields: { token: true } });
    expect(screen.getByLabelText('Bearer token')).toBeDisabled();
    await userEvent.click(screen.getByRole('button', { name: 'Reset' }));
    expect(onOptionsChange).toHaveBeenLastCalledWith(
      expect.objectContaining({ secureJsonFields: { token: false }, secureJsonData: { token: '' } })
    );
  });

  it('stores the tenant in jsonData, empty meaning the default tenant', async () => {
    const onOptionsChange = setup({ jsonData: { tenant: 'a' } });
    expect(screen.getByLabelText('Tenant')).toHaveValue('a');
    await userEvent.clear(screen.getByLabelText('Tenant'));
    expect(onOptionsChange).toHaveBeenLastCalledWith(expect.objectContaining({ jsonData: { tenant: undefined } }));
  });
});
