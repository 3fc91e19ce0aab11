// The form that creates an anomaly detector (`POST api/v1/detectors`, docs/detectors.md):
// name, PromQL query, step, history, model kind, direction and alpha. The server validates the
// definition; a bad one is shown with its 400 message (`invalid detector: query: ...`), an
// existing name with its 409.

import { apiPost } from '../api.js';
import { h, setChildren } from '../dom.js';

export const MODEL_KINDS = [
  ['median_mad', 'median/MAD (rolling median, robust scale)'],
  ['zscore', 'z-score (rolling mean/sd)'],
  ['seasonal_naive', 'seasonal naive (one day of steps)'],
  ['nbeats', 'N-BEATS (trained neural forecaster)'],
];
const DIRECTIONS = [['both', 'both'], ['above', 'above the band'], ['below', 'below the band']];

/** The request body for the form's values (empty optional fields left out). */
export function detectorBody(v) {
  const body = { name: v.name.trim(), query: v.query.trim() };
  if (v.step.trim()) body.step = v.step.trim();
  if (v.history.trim()) body.history = v.history.trim();
  if (v.kind) body.model = { kind: v.kind };
  if (v.direction) body.direction = v.direction;
  if (String(v.alpha).trim() !== '') body.alpha = Number(v.alpha);
  if (v.description && v.description.trim()) body.description = v.description.trim();
  return body;
}

/** The form (`data-testid="detector-form"`); `onCreated(detector)` runs after a 201. */
export function detectorForm(onCreated, onCancel) {
  const field = (id, label, input, cls = '') =>
    h('div', { class: `field ${cls}` }, h('label', { for: id }, label), input);
  const input = (key, attrs) => h('input', {
    id: `detector-${key}`, name: key, 'data-testid': `detector-${key}`, autocomplete: 'off',
    spellcheck: 'false', ...attrs,
  });
  const name = input('name', { required: true, placeholder: 'hallucination_gpt4o', maxlength: '64' });
  const query = h('textarea', {
    id: 'detector-query', name: 'query', 'data-testid': 'detector-query', required: true, rows: '2',
    spellcheck: 'false', placeholder: 'sightline_quality_hallucination_index{model!=""}',
  });
  const step = input('step', { value: '60s', placeholder: '60s' });
  const history = input('history', { value: '6h', placeholder: '7d' });
  const kind = h('select', { id: 'detector-kind', name: 'kind', 'data-testid': 'detector-kind' },
    MODEL_KINDS.map(([v, l]) => h('option', { value: v }, l)));
  const direction = h('select', { id: 'detector-direction', name: 'direction', 'data-testid': 'detector-direction' },
    DIRECTIONS.map(([v, l]) => h('option', { value: v }, l)));
  const alpha = input('alpha', { type: 'number', value: '0.05', step: 'any', placeholder: '0.01' });
  const description = input('description', { placeholder: 'optional' });
  const error = h('div', { class: 'form-error', 'data-testid': 'detector-form-error', role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit', class: 'primary', 'data-testid': 'detector-submit' }, 'Create detector');
  const form = h('form', { class: 'detector-form card', 'data-testid': 'detector-form' },
    h('h2', {}, 'New detector'),
    h('p', { class: 'muted' }, 'Learns each series of a PromQL expression and writes a calibrated band back as ',
      h('code', {}, '<name>:lower'), ', ', h('code', {}, ':upper'), ', ', h('code', {}, ':predicted'),
      '; sustained departures become anomaly events. docs/detectors.md lists every field.'),
    h('div', { class: 'form-grid' },
      field('detector-name', 'Name', name),
      field('detector-query', 'PromQL query', query, 'wide'),
      field('detector-step', 'Step', step),
      field('detector-history', 'History', history),
      field('detector-kind', 'Model', kind),
      field('detector-direction', 'Direction', direction),
      field('detector-alpha', 'Alpha (miscoverage)', alpha),
      field('detector-description', 'Description', description, 'wide')),
    error,
    h('div', { class: 'row' }, submit,
      h('button', { type: 'button', 'data-testid': 'detector-cancel', onclick: () => onCancel && onCancel() }, 'Cancel')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    error.hidden = true;
    submit.disabled = true;
    const body = detectorBody({
      name: name.value, query: query.value, step: step.value, history: history.value,
      kind: kind.value, direction: direction.value, alpha: alpha.value, description: description.value,
    });
    try {
      const det = await apiPost('api/v1/detectors', body);
      form.reset();
      onCreated(det && det.name ? det : body);
    } catch (e) {
      setChildren(error, h('strong', {}, 'The server refused the detector'), ': ', e.message);
      error.hidden = false;
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}
