import { svg } from './ui.js';

// Hand-written SVG charts: a sparkline for a table cell and a line chart with a time
// axis, a threshold line and markers for logbook entries. Missing values leave gaps;
// nothing is drawn where the robot measured nothing. No library: a few hundred lines
// of SVG are lighter than any.

// segments splits points [{t, v}] (sorted by t) into runs without missing values.
function segments(points) {
  const out = [];
  let run = [];
  for (const p of points) {
    if (typeof p.v !== 'number' || !Number.isFinite(p.v)) {
      if (run.length) out.push(run);
      run = [];
      continue;
    }
    run.push(p);
  }
  if (run.length) out.push(run);
  return out;
}

const path = (run, x, y) => run.map((p, i) => `${i ? 'L' : 'M'}${x(p.t).toFixed(1)} ${y(p.v).toFixed(1)}`).join('');

// sparkline draws series [{points: [{t, v}], min, max, cls}] over [from, to] in a
// small box. data-points counts the first series' drawn points.
export function sparkline({ series, from, to, width = 96, height = 26, label }) {
  const el = svg('svg', { class: 'spark', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label });
  const x = (t) => 1 + ((t - from) / Math.max(1, to - from)) * (width - 2);
  let drawn = 0;
  series.forEach((s, i) => {
    const y = (v) => height - 2 - ((v - s.min) / Math.max(1e-9, s.max - s.min)) * (height - 4);
    const runs = segments(s.points);
    if (i === 0) drawn = runs.reduce((n, r) => n + r.length, 0);
    for (const run of runs) {
      if (run.length === 1) el.append(svg('circle', { cx: x(run[0].t), cy: y(run[0].v), r: 1.5, class: s.cls }));
      else el.append(svg('path', { d: path(run, x, y), class: s.cls }));
    }
  });
  el.dataset.points = String(drawn);
  return el;
}

// niceTicks gives round values for an axis from lo to hi.
function niceTicks(lo, hi, count = 4) {
  const span = Math.max(1e-9, hi - lo);
  const raw = span / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-6; v += step) out.push(Number(v.toFixed(6)));
  return out;
}

// timeTicks gives midnights (or months) between from and to, about count of them.
function timeTicks(from, to, count = 6) {
  const dayMs = 86400000;
  const days = (to - from) / dayMs;
  const every = [1, 2, 7, 14, 30, 61, 91, 182].find((d) => days / d <= count) || 365;
  const out = [];
  const start = new Date(from);
  start.setHours(0, 0, 0, 0);
  for (let t = start.getTime(); t <= to; t += every * dayMs) if (t >= from) out.push(t);
  return out;
}

const dayLabel = (t, long) => new Date(t).toLocaleDateString(undefined, long ? { day: 'numeric', month: 'short', year: '2-digit' } : { day: 'numeric', month: 'short' });

// lineChart draws points [{t, v}] over [from, to] with a y range [min, max]
// (widened to the data), an optional threshold, and markers [{t, kind, label}]
// (vertical lines: watering, harvest, other). format(v) writes a value. Points get
// a dot with a tooltip when there are few enough to tell apart.
export function lineChart({ points, from, to, min, max, threshold, markers = [], format = String, label, width = 640, height = 240 }) {
  const pad = { l: 44, r: 10, t: 10, b: 26 };
  const values = points.map((p) => p.v).filter((v) => typeof v === 'number' && Number.isFinite(v));
  const lo = Math.min(min, ...values);
  const hi = Math.max(max, ...values, lo + 1e-9);
  const x = (t) => pad.l + ((t - from) / Math.max(1, to - from)) * (width - pad.l - pad.r);
  const y = (v) => height - pad.b - ((v - lo) / (hi - lo)) * (height - pad.t - pad.b);
  const el = svg('svg', { class: 'chart', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label, preserveAspectRatio: 'xMidYMid meet' });
  const title = svg('title');
  title.textContent = label;
  el.append(title);

  const grid = svg('g', { class: 'grid' });
  for (const v of niceTicks(lo, hi)) {
    grid.append(svg('line', { x1: pad.l, x2: width - pad.r, y1: y(v), y2: y(v) }));
    const t = svg('text', { x: pad.l - 6, y: y(v) + 4, 'text-anchor': 'end' });
    t.textContent = format(v);
    grid.append(t);
  }
  const long = to - from > 200 * 86400000;
  for (const t of timeTicks(from, to)) {
    grid.append(svg('line', { x1: x(t), x2: x(t), y1: pad.t, y2: height - pad.b, class: 'vt' }));
    const l = svg('text', { x: x(t), y: height - 8, 'text-anchor': 'middle' });
    l.textContent = dayLabel(t, long);
    grid.append(l);
  }
  el.append(grid);

  if (typeof threshold === 'number' && threshold >= lo && threshold <= hi) {
    el.append(svg('line', { class: 'threshold', x1: pad.l, x2: width - pad.r, y1: y(threshold), y2: y(threshold) }));
  }

  const marks = svg('g', { class: 'markers' });
  for (const m of markers) {
    if (m.t < from || m.t > to) continue;
    const g = svg('g', { class: 'marker marker-' + m.kind });
    g.append(svg('line', { x1: x(m.t), x2: x(m.t), y1: pad.t, y2: height - pad.b }),
      svg('circle', { cx: x(m.t), cy: pad.t + 4, r: 4 }));
    const tip = svg('title');
    tip.textContent = `${new Date(m.t).toLocaleString()}: ${m.label}`;
    g.append(tip);
    marks.append(g);
  }
  el.append(marks);

  const runs = segments(points);
  const line = svg('g', { class: 'series' });
  for (const run of runs) {
    if (run.length > 1) line.append(svg('path', { d: path(run, x, y) }));
  }
  const drawn = runs.reduce((n, r) => n + r.length, 0);
  if (drawn <= 400) {
    for (const run of runs) {
      for (const p of run) {
        const c = svg('circle', { cx: x(p.t), cy: y(p.v), r: run.length === 1 ? 3 : 2 });
        const tip = svg('title');
        tip.textContent = `${new Date(p.t).toLocaleString()}: ${format(p.v)}`;
        c.append(tip);
        line.append(c);
      }
    }
  }
  el.append(line);
  el.dataset.points = String(drawn);
  el.dataset.markers = String(marks.childElementCount);
  return el;
}
