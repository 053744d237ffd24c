import { get } from './api.js';
import { h, problemBox, fmt } from './ui.js';
import { sparkline, lineChart } from './charts.js';

// History in the garden page: a small trend per bed in the beds table (soil humidity
// and the worst health level over the last 30 days), and a chart of a bed or one of
// its plants (the value and range chosen) with the logbook's waterings and harvests
// marked, so a grower sees what a watering did.

const dayMs = 86400000;
const trendDays = 30;

const bedPath = (c, g, b) => `/companies/${c}/gardens/${g}/beds/${b}`;

function worst(p) {
  return Array.isArray(p.health) && p.health.length ? Math.max(...p.health.map((x) => x.loglevel)) : null;
}
const level = (type) => (p) => {
  const e = (p.health || []).find((x) => x.type === type);
  return e ? e.loglevel : null;
};
const whole = (v) => String(Math.round(v * 10) / 10);

// The values a chart can show: how to read one from a point, its usual range, how
// to write it, and the garden's threshold for it.
export const chartValues = [
  { id: 'soil_humidity', label: 'Soil humidity', get: (p) => p.soil_humidity, min: 0, max: 1, format: (v) => `${Math.round(v * 100)} %`, threshold: (t) => t.soil_humidity_min },
  { id: 'worst', label: 'Worst health level', get: worst, min: 0, max: 4, format: whole },
  { id: 'water', label: 'Water level', get: level('water'), min: 0, max: 4, format: whole, threshold: (t) => t.water },
  { id: 'nutrients', label: 'Nutrients level', get: level('nutrients'), min: 0, max: 4, format: whole, threshold: (t) => t.nutrients },
  { id: 'diseases', label: 'Diseases level', get: level('diseases'), min: 0, max: 4, format: whole, threshold: (t) => t.diseases },
  { id: 'yield', label: 'Yield', get: (p) => p.yield, min: 0, max: 0.5, format: (v) => fmt.num(v) },
  { id: 'harvest', label: 'Weeks to harvest', get: (p) => (typeof p.harvest === 'string' ? parseFloat(p.harvest) : null), min: 0, max: 1, format: (v) => `${whole(v)} wk` },
];

export const chartRanges = [
  { days: 7, label: 'Last 7 days' },
  { days: 30, label: 'Last 30 days' },
  { days: 90, label: 'Last 90 days' },
  { days: 365, label: 'Last year' },
  { days: 730, label: 'Last 2 years' },
];

// markerOf turns a log into a chart marker: waterings, harvests and other records;
// tasks are plans, not events.
export function markerOf(log) {
  if (log.type === 'task') return null;
  let kind = 'note';
  if (log.type === 'harvest') kind = 'harvest';
  else if (log.type === 'activity' && /water|irrigat/i.test(log.title)) kind = 'water';
  return { t: Date.parse(log.at), kind, label: log.title };
}

// limiter runs at most n loads at once.
function limiter(n) {
  let active = 0;
  const queue = [];
  const next = () => {
    if (active >= n || !queue.length) return;
    active++;
    const { fn, resolve, reject } = queue.shift();
    fn().then(resolve, reject).finally(() => { active--; next(); });
  };
  return (fn) => new Promise((resolve, reject) => { queue.push({ fn, resolve, reject }); next(); });
}

// bedTrends is the beds panel's list of trends: per bed a sparkline of its soil
// humidity and worst health level over the last 30 days, each loaded when it scrolls
// into view, a few at a time, once per page. update(beds) follows the beds stream.
export function bedTrends(c, g, signal) {
  const run = limiter(3);
  const items = new Map(); // bed key → list item
  const list = h('ul', { class: 'trends' });
  const el = h('div', { class: 'trends-box' },
    h('h3', {}, `Last ${trendDays} days`),
    h('p', { class: 'hint trends-legend' }, h('span', { class: 'mk mk-water', 'aria-hidden': 'true' }), 'soil humidity ',
      h('span', { class: 'mk mk-health', 'aria-hidden': 'true' }), 'worst health level'),
    list);
  const observer = new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (!e.isIntersecting) continue;
      observer.unobserve(e.target);
      fill(e.target.querySelector('.trend'));
    }
  }, { rootMargin: '100px' });
  signal.addEventListener('abort', () => observer.disconnect());

  async function fill(cell) {
    const to = Date.now();
    const from = to - trendDays * dayMs;
    try {
      const res = await run(() => get(`${bedPath(c, g, cell.dataset.bed)}/history?from=${new Date(from).toISOString()}`, { signal }));
      Object.assign(cell.dataset, { from: new Date(from).toISOString(), to: new Date(to).toISOString() });
      const pts = res.points.map((p) => ({ t: Date.parse(p.at), h: p.soil_humidity, w: worst(p) }));
      if (!pts.length) { cell.replaceChildren(h('span', { class: 'hint' }, 'no history yet')); cell.dataset.points = '0'; return; }
      const last = res.points[res.points.length - 1];
      const label = `Last ${trendDays} days: soil humidity ${fmt.pct(last.soil_humidity)} now, worst health level ${worst(last) ?? '–'} now; ${pts.length} scans`;
      const s = sparkline({
        from, to, label, width: 160, height: 28,
        series: [
          { points: pts.map((p) => ({ t: p.t, v: p.h })), min: 0, max: 1, cls: 'spark-humidity' },
          { points: pts.map((p) => ({ t: p.t, v: p.w })), min: 0, max: 5, cls: 'spark-health' },
        ],
      });
      cell.replaceChildren(s);
      cell.dataset.points = s.dataset.points;
    } catch (err) {
      if (err.name !== 'AbortError') cell.replaceChildren(h('span', { class: 'hint', title: err.message }, 'unavailable'));
    }
  }

  return {
    el,
    update(beds) {
      for (const b of beds) {
        const key = String(b.id);
        if (items.has(key) || b.error) continue;
        const li = h('li', {}, h('span', { class: 'trend-name' }, b.name || `Bed ${b.id}`),
          h('span', { class: 'trend', dataset: { bed: key } }, h('span', { class: 'hint' }, '…')));
        items.set(key, li);
        list.append(li);
        observer.observe(li);
      }
    },
  };
}

// historyChart is the garden page's chart panel. show(bed, plantID) points it at a
// bed (its line and plants as the page has them) and optionally one of its plants.
export function historyChart({ c, g, signal }) {
  const state = { bed: null, subject: '', value: 'soil_humidity', days: 30, token: 0 };
  const thresholds = get(`/companies/${c}/gardens/${g}/guidance`, { signal }).then((doc) => doc.thresholds, () => null);
  const select = (name, label, options, onChange) => {
    const s = h('select', { name, id: 'chart-' + name });
    for (const o of options) s.append(h('option', { value: o.value }, o.label));
    s.addEventListener('change', () => onChange(s.value));
    return { s, field: h('span', { class: 'field' }, h('label', { for: 'chart-' + name }, label), s) };
  };
  const subject = select('subject', 'Of', [], (v) => { state.subject = v; draw(); });
  const value = select('value', 'Value', chartValues.map((v) => ({ value: v.id, label: v.label })), (v) => { state.value = v; draw(); });
  const range = select('range', 'Range', chartRanges.map((r) => ({ value: String(r.days), label: r.label })), (v) => { state.days = Number(v); draw(); });
  value.s.value = state.value;
  range.s.value = String(state.days);
  const box = h('div', { class: 'chart-box' }, h('p', { class: 'hint' }, 'Select a bed to see its history.'));
  const summary = h('p', { class: 'hint chart-summary' });
  const el = h('section', { class: 'panel panel-history', 'aria-labelledby': 'history-h', hidden: true },
    h('h2', { id: 'history-h' }, 'History'),
    h('div', { class: 'chart-controls' }, subject.field, value.field, range.field),
    box, summary,
    h('ul', { class: 'chart-legend', 'aria-label': 'Marks' },
      h('li', {}, h('span', { class: 'mk mk-water', 'aria-hidden': 'true' }), 'watering'),
      h('li', {}, h('span', { class: 'mk mk-harvest', 'aria-hidden': 'true' }), 'harvest'),
      h('li', {}, h('span', { class: 'mk mk-note', 'aria-hidden': 'true' }), 'other logbook entry'),
      h('li', {}, h('span', { class: 'mk mk-threshold', 'aria-hidden': 'true' }), 'alert threshold')));

  function plantName(p, i) {
    return `Plant ${i + 1}${p.plant ? ` (${p.plant})` : ''}`;
  }

  // show is called whenever the page redraws the bed's plants: the chart is drawn
  // again only when the bed or the subject changed, the plant list kept current.
  function show(bed, plantID) {
    el.hidden = false;
    const sameBed = state.bed && String(state.bed.id) === String(bed.id);
    const listed = (bed.plants || []).map((p) => p.id).join();
    if (sameBed && plantID === undefined && listed === state.listed) return;
    state.listed = listed;
    const redraw = !sameBed || (plantID !== undefined && plantID !== state.subject);
    state.bed = bed;
    const name = bed.line && bed.line.name ? bed.line.name : `Bed ${bed.id}`;
    subject.s.replaceChildren(h('option', { value: '' }, `${name} (the whole bed)`),
      ...(bed.plants || []).map((p, i) => h('option', { value: p.id }, plantName(p, i))));
    if (plantID !== undefined) state.subject = plantID;
    else if (!sameBed) state.subject = '';
    if (state.subject && !(bed.plants || []).some((p) => p.id === state.subject)) state.subject = '';
    subject.s.value = state.subject;
    if (redraw || box.dataset.state !== 'drawn') draw();
  }

  async function draw() {
    const bed = state.bed;
    if (!bed) return;
    const token = ++state.token;
    const v = chartValues.find((x) => x.id === state.value);
    const to = Date.now();
    const from = to - state.days * dayMs;
    const base = bedPath(c, g, bed.id);
    const plant = state.subject;
    const path = plant ? `${base}/plants/${encodeURIComponent(plant)}/history` : `${base}/history`;
    const iso = new Date(from).toISOString();
    box.dataset.state = 'loading';
    try {
      const [hist, logs, th] = await Promise.all([
        get(`${path}?from=${iso}`, { signal }),
        get(`/companies/${c}/gardens/${g}/logs?bed=${bed.id}&from=${iso}&limit=200`, { signal }).then((r) => r.logs, () => []),
        thresholds,
      ]);
      if (token !== state.token || signal.aborted) return;
      const points = hist.points.map((p) => ({ t: Date.parse(p.at), v: v.get(p) }));
      const markers = logs.filter((l) => !plant || !l.plant || l.plant === plant).map(markerOf).filter(Boolean);
      const who = subject.s.selectedOptions[0] ? subject.s.selectedOptions[0].textContent : '';
      const label = `${v.label} of ${who}, ${chartRanges.find((r) => r.days === state.days).label.toLowerCase()}`;
      const chart = lineChart({ points, from, to, min: v.min, max: v.max, format: v.format, label, markers,
        threshold: th && v.threshold ? v.threshold(th) : undefined });
      box.replaceChildren(chart);
      Object.assign(box.dataset, { state: 'drawn', from: iso, to: new Date(to).toISOString(), value: v.id });
      box.dataset.subject = plant || 'bed';
      const n = Number(chart.dataset.points);
      const values = points.filter((p) => typeof p.v === 'number');
      summary.textContent = n === 0
        ? 'No measurements of this value in the range yet.'
        : `${n} measurements, from ${v.format(Math.min(...values.map((p) => p.v)))} to ${v.format(Math.max(...values.map((p) => p.v)))}; latest ${v.format(values[values.length - 1].v)}. ${markers.length} logbook entries marked.`;
    } catch (err) {
      if (token !== state.token || err.name === 'AbortError') return;
      box.dataset.state = 'failed';
      box.replaceChildren(problemBox(err, 'The history'));
    }
  }

  return { el, show };
}
