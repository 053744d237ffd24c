import { request, paths } from './api.js';
import { h, problemBox, announce } from './ui.js';

// Export buttons: a link cannot carry the token, so each file is fetched with the
// Authorization header and handed to the browser as a download of a blob.

export const exportFiles = [
  { file: 'plants.geojson', label: 'Plants (GeoJSON)', hint: 'one point per placed plant, for QGIS' },
  { file: 'plants.csv', label: 'Plants (CSV)', hint: 'every plant, for spreadsheets' },
  { file: 'beds.csv', label: 'Beds (CSV)', hint: 'each bed’s averages' },
  { file: 'logs.csv', label: 'Logbook (CSV)', hint: 'every log, for spreadsheets and farmOS' },
  { file: 'logs.geojson', label: 'Logbook (GeoJSON)', hint: 'logs at their bed or plant' },
  { file: 'garden.zip', label: 'Everything (ZIP)', hint: 'all of the above and the georeferenced picture' },
];

export function exportPanel(c, g) {
  const status = h('div', { class: 'export-status', role: 'status', 'aria-live': 'polite' });
  const list = h('ul', { class: 'exports' }, exportFiles.map((x) => {
    const b = h('button', { type: 'button', dataset: { file: x.file } }, x.label);
    b.addEventListener('click', () => download(c, g, x, b, status));
    return h('li', {}, b, h('span', { class: 'hint' }, ' ' + x.hint));
  }));
  return h('section', { class: 'card export-panel', 'aria-labelledby': 'export-h' },
    h('h2', { id: 'export-h' }, 'Export'), list, status);
}

async function download(c, g, x, button, status) {
  button.disabled = true;
  status.replaceChildren(h('p', {}, `Preparing ${x.file}…`));
  try {
    const res = await request('GET', paths.export(c, g, x.file), { raw: true });
    const blob = await res.blob();
    const name = filenameOf(res.headers.get('Content-Disposition')) || x.file;
    const url = URL.createObjectURL(blob);
    const a = h('a', { href: url, download: name, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    status.replaceChildren(h('p', { class: 'ok', dataset: { file: x.file, name } }, `Saved ${name} (${size(blob.size)}).`));
    announce(`Saved ${name}`);
  } catch (err) {
    status.replaceChildren(problemBox(err, x.file));
  } finally {
    button.disabled = false;
  }
}

// filenameOf reads Content-Disposition: RFC 6266's filename* (UTF-8) first.
export function filenameOf(cd) {
  if (!cd) return '';
  const star = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(cd);
  if (star) {
    try { return clean(decodeURIComponent(star[1].trim())); } catch { /* fall back to filename */ }
  }
  const plain = /filename\s*=\s*"([^"]*)"/i.exec(cd) || /filename\s*=\s*([^;]+)/i.exec(cd);
  return plain ? clean(plain[1].trim()) : '';
}

const clean = (name) => name.replace(/[/\\\x00-\x1f]/g, '_');

function size(n) {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}
