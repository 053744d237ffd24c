// DOM helpers. Text from the server only ever goes in through textContent or
// attributes, never as HTML.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

export function svg(tag, attrs) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  }
  return el;
}

function append(el, children) {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// announce tells screen-reader users what changed.
export function announce(text) {
  const s = document.getElementById('status');
  if (s) s.textContent = text;
}

// problemBox shows an API error in plain words: the problem's detail.
export function problemBox(err, what) {
  const msg = err && err.message ? err.message : String(err);
  return h('p', { class: 'problem', role: 'alert' }, what ? `${what}: ${msg}` : msg);
}

// form builds a labelled form; fields: [{name, label, type, value, required, ...}].
// onSubmit gets the values; a thrown ApiError is shown in the form, its field errors
// beside the fields.
export function form({ fields, submit, onSubmit, className, note }) {
  const inputs = {};
  const errorBox = h('div', { class: 'form-error', 'aria-live': 'assertive' });
  const button = h('button', { type: 'submit', class: 'primary' }, submit);
  const f = h('form', { class: className || 'stack', novalidate: true });
  for (const fd of fields) {
    const id = 'f-' + Math.random().toString(36).slice(2, 9);
    let input;
    if (fd.type === 'select') {
      input = h('select', { id, name: fd.name, required: fd.required });
      for (const o of fd.options) input.append(h('option', { value: o.value, selected: o.value === fd.value }, o.label));
    } else if (fd.type === 'checkbox') {
      input = h('input', { id, name: fd.name, type: 'checkbox', checked: fd.value });
    } else {
      input = h('input', {
        id, name: fd.name, type: fd.type || 'text', value: fd.value ?? '', required: fd.required,
        autocomplete: fd.autocomplete, minlength: fd.minlength, maxlength: fd.maxlength,
        step: fd.step, inputmode: fd.inputmode, placeholder: fd.placeholder,
      });
    }
    const err = h('span', { class: 'field-error', id: id + '-err' });
    input.setAttribute('aria-describedby', id + '-err');
    inputs[fd.name] = { input, err };
    const label = h('label', { for: id }, fd.label);
    f.append(fd.type === 'checkbox' ? h('div', { class: 'check' }, input, label, err) : h('div', { class: 'field' }, label, input, err));
  }
  if (note) f.append(note);
  f.append(errorBox, h('div', { class: 'actions' }, button));
  f.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    errorBox.replaceChildren();
    for (const { input, err } of Object.values(inputs)) { err.textContent = ''; input.removeAttribute('aria-invalid'); }
    const values = {};
    for (const [name, { input }] of Object.entries(inputs)) values[name] = input.type === 'checkbox' ? input.checked : input.value;
    button.disabled = true;
    try {
      await onSubmit(values, f);
    } catch (e) {
      if (e.name === 'AbortError') return;
      errorBox.append(problemBox(e));
      for (const [name, msg] of Object.entries(e.fields || {})) {
        if (inputs[name]) { inputs[name].err.textContent = msg; inputs[name].input.setAttribute('aria-invalid', 'true'); }
      }
    } finally {
      button.disabled = false;
    }
  });
  f.inputs = inputs;
  return f;
}

// confirmDialog asks before something that cannot be undone; resolves true or false.
export function confirmDialog(message, action) {
  return new Promise((resolve) => {
    const cancel = h('button', { type: 'button' }, 'Cancel');
    const ok = h('button', { type: 'button', class: 'danger' }, action);
    const d = h('dialog', { class: 'confirm', 'aria-label': action }, h('p', {}, message), h('div', { class: 'actions' }, cancel, ok));
    const done = (v) => { d.close(); d.remove(); resolve(v); };
    cancel.addEventListener('click', () => done(false));
    ok.addEventListener('click', () => done(true));
    d.addEventListener('cancel', (e) => { e.preventDefault(); done(false); });
    document.body.append(d);
    d.showModal();
    cancel.focus();
  });
}

// Numbers as people read them; missing values say so rather than show 0.
export const fmt = {
  pct: (v) => (typeof v === 'number' ? `${Math.round(v * 100)} %` : '–'),
  num: (v, d = 2) => (typeof v === 'number' ? v.toFixed(d).replace(/\.?0+$/, '') : '–'),
  text: (v) => (v === undefined || v === null || v === '' ? '–' : String(v)),
  date: (v) => (v ? new Date(v).toLocaleString() : '–'),
};

// Health: the worst level of a plant or bed decides its colour.
export const levels = [
  { max: 0, label: 'Fine (0)', cls: 'lv0' },
  { max: 1, label: 'Watch (1)', cls: 'lv1' },
  { max: 2, label: 'Concern (2)', cls: 'lv2' },
  { max: 3, label: 'Serious (3)', cls: 'lv3' },
  { max: Infinity, label: 'Critical (4+)', cls: 'lv4' },
];
export const noHealth = { label: 'No health data', cls: 'lvn' };

export function worstLevel(health) {
  if (!Array.isArray(health) || health.length === 0) return null;
  return Math.max(...health.map((x) => x.loglevel));
}

export function levelOf(health) {
  const w = worstLevel(health);
  if (w === null) return noHealth;
  return levels.find((l) => w <= l.max);
}

export function healthText(health) {
  if (!Array.isArray(health) || health.length === 0) return '–';
  return health.map((x) => `${x.type} ${x.loglevel}`).join(', ');
}

export function legend() {
  return h('ul', { class: 'legend', 'aria-label': 'Legend: health levels' },
    [...levels, noHealth].map((l) => h('li', {}, h('span', { class: 'swatch ' + l.cls, 'aria-hidden': 'true' }), l.label)));
}

export function setTitle(...parts) {
  document.title = [...parts, 'gardend'].filter(Boolean).join(' · ');
}
