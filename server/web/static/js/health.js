import { h, levels, noHealth } from './ui.js';

// How a gardener reads the values: health coloured by the aspect they pick (kept on
// this device), harvest estimates and bed names in words.

export const aspects = [
  { id: 'worst', label: 'Worst of all' },
  { id: 'water', label: 'Water' },
  { id: 'nutrients', label: 'Nutrients' },
  { id: 'diseases', label: 'Diseases' },
];
const KEY = 'gardend.aspect';
const listeners = new Set();

export function aspect() {
  const v = localStorage.getItem(KEY);
  return aspects.some((a) => a.id === v) ? v : 'worst';
}

export function setAspect(id) {
  localStorage.setItem(KEY, id);
  for (const fn of listeners) fn(id);
}

// onAspect calls fn when the user picks another aspect; it returns the unsubscribe.
export function onAspect(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

// aspectPicker is the select that changes the colouring everywhere on the page.
export function aspectPicker() {
  const id = 'aspect-' + Math.random().toString(36).slice(2, 8);
  const sel = h('select', { id, class: 'aspect-picker' }, aspects.map((a) => h('option', { value: a.id, selected: a.id === aspect() }, a.label)));
  sel.addEventListener('change', () => setAspect(sel.value));
  const off = onAspect((v) => { sel.value = v; });
  sel.detach = off;
  return h('span', { class: 'aspect' }, h('label', { for: id }, 'Colour health by'), sel);
}

// levelFor is the level of health that colours it for the aspect: the worst level,
// or the aspect's own (null: no value for it).
export function levelFor(health, which = aspect()) {
  if (!Array.isArray(health) || health.length === 0) return null;
  if (which === 'worst') return Math.max(...health.map((x) => x.loglevel));
  const e = health.find((x) => x.type === which);
  return e ? e.loglevel : null;
}

export function levelClass(health, which = aspect()) {
  const v = levelFor(health, which);
  return v === null ? noHealth.cls : levels.find((l) => v <= l.max).cls;
}

const words = ['fine', 'watch', 'concern', 'serious', 'critical'];
export const levelWord = (v) => (v === null ? 'no data' : words[Math.min(Math.max(v, 0), 4)]);

// healthCell: a swatch coloured for the aspect, the level in a word and the value
// it comes from ("serious · water 3"); every aspect in the title.
export function healthCell(health, which = aspect()) {
  const v = levelFor(health, which);
  const all = Array.isArray(health) && health.length ? health.map((x) => `${x.type} ${x.loglevel}`).join(', ') : 'no health data';
  let detail = '';
  if (v !== null) {
    const src = which === 'worst' ? health.find((x) => x.loglevel === v) : health.find((x) => x.type === which);
    detail = `${src.type} ${src.loglevel}`;
  } else if (which !== 'worst' && Array.isArray(health) && health.length) {
    detail = `no ${which} value`;
  }
  const cls = levelClass(health, which);
  return h('span', { class: 'health', title: all, dataset: { level: v === null ? '' : String(v), cls } },
    h('span', { class: 'swatch ' + cls, 'aria-hidden': 'true' }),
    h('span', { class: 'word' }, v === null && !detail ? 'no data' : levelWord(v)),
    detail ? [' ', h('span', { class: 'detail' }, detail)] : null);
}

// harvestWords reads the seed's "<n> week" as words: "ready now", "ready in 3
// weeks", "ready in ~39 weeks" with the note "(about 9 months)", "ready in ~108
// weeks" with "(over 2 years)". Anything else is shown as it came.
export function harvestWords(v) {
  if (typeof v !== 'string' || !v.trim()) return { text: '–', note: '' };
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*weeks?\s*$/i.exec(v);
  if (!m) return { text: v, note: '' };
  const n = Math.round(Number(m[1]));
  if (n <= 0) return { text: 'ready now', note: '' };
  if (n === 1) return { text: 'ready in 1 week', note: '' };
  if (n < 13) return { text: `ready in ${n} weeks`, note: '' };
  if (n < 104) return { text: `ready in ~${n} weeks`, note: `(about ${Math.round(n / 4.345)} months)` };
  return { text: `ready in ~${n} weeks`, note: `(over ${Math.floor(n / 52)} years)` };
}

export function harvestText(v) {
  const w = harvestWords(v);
  return w.note ? `${w.text} ${w.note}` : w.text;
}

// harvestCell: the words, the note under them in a table.
export function harvestCell(v) {
  const w = harvestWords(v);
  return h('span', { class: 'harvest' }, w.text, w.note ? [' ', h('span', { class: 'sub' }, w.note)] : null);
}

// harvestWeeks is the number for sorting.
export function harvestWeeks(v) {
  const n = typeof v === 'string' ? parseFloat(v) : NaN;
  return Number.isFinite(n) ? n : null;
}

// bedLabel is a bed as its people call it: its name from the beds stream, else its
// id ("bed 7" only when it has no name at all).
export function bedLabel(name, id) {
  return name && String(name).trim() ? String(name) : `Bed ${id}`;
}
