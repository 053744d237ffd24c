import { get, post } from './api.js';

// The garden page's panels, shown or hidden per user. The choice is kept in the
// user's widget configuration (/user/widgets) as the original client kept its own:
// an object whose "widgets" array lists what shows. Entries of other clients are kept.
export const panels = [
  { id: 'map', label: 'Map' },
  { id: 'beds', label: 'Beds table' },
  { id: 'plants', label: 'Plants of the selected bed' },
  { id: 'legend', label: 'Legend' },
];
const ours = new Set(panels.map((p) => p.id));

let doc = null;

export async function loadLayout(signal) {
  doc = await get('/user/widgets', { signal });
  const list = doc && typeof doc === 'object' && Array.isArray(doc.widgets) ? doc.widgets : [];
  const shown = list.filter((w) => ours.has(w));
  return { shown: shown.length ? shown : panels.map((p) => p.id) };
}

export async function saveLayout(ids) {
  const base = doc && typeof doc === 'object' && !Array.isArray(doc) ? doc : {};
  const others = Array.isArray(base.widgets) ? base.widgets.filter((w) => !ours.has(w)) : [];
  doc = await post('/user/widgets', { ...base, widgets: [...others, ...ids] });
}
