import { get, readLines, paths } from './api.js';
import { h, clear, setTitle, problemBox, announce, fmt, legend } from './ui.js';
import { aspect, aspectPicker, onAspect, levelFor, levelClass, healthCell, harvestText, harvestCell, harvestWeeks, bedLabel, aspects } from './health.js';
import { sortableTable } from './table.js';
import { GardenMap } from './map.js';
import { gardenImage, whenTiled } from './images.js';
import { mean } from './geo.js';
import { panels, loadLayout, saveLayout } from './widgets.js';
import { attention } from './alerts.js';
import { bedTrends, historyChart } from './history.js';

const cloudText = {
  stored: 'placed',
  downloading: 'point cloud downloading',
  failed: 'point cloud download failed',
  none: 'no point cloud',
};

// mapLabel is what fits in a bed's square on the map: a short name whole, else the
// number it ends with ("Bed 6" → 6), else its start.
function mapLabel(name) {
  if (name.length <= 4) return name;
  const n = /(\d+)\s*$/.exec(name);
  return n ? n[1] : name.slice(0, 3) + '…';
}

// plantCell: the species, and the variety under it.
const plantCell = (species, variety) => h('span', {}, fmt.text(species), variety ? [' ', h('span', { class: 'sub' }, variety)] : null);

// The garden page: the picture with every bed and plant on it, the beds table filling
// in as the stream arrives, and the plants of the selected bed. Plants whose point
// cloud is still downloading are fetched again until they land.
export async function garden(main, [c, g, bedParam], signal) {
  const base = paths.garden(c, g);
  // The picture is the largest download: it starts first.
  const picture = gardenImage(c, g, signal);
  picture.catch(() => {}); // handled below, once the page is laid out
  const [gd, co, role, layout] = await Promise.all([
    get(base, { signal }), get(paths.company(c), { signal }), get(base + '/role', { signal }), loadLayout(signal)]);
  setTitle(gd.name, co.name);
  const admin = role.role === 'admin';
  const state = { beds: new Map(), order: [], total: null, streamDone: false, selected: bedParam || null, timers: new Set() };

  // Panels.
  const progress = h('p', { class: 'progress', role: 'status', 'aria-live': 'polite' }, 'Reading beds…');
  const bedsProblem = h('div');
  const plantsTitle = h('h2', { id: 'plants-h' }, 'Plants');
  const plantsBody = h('div', {}, h('p', { class: 'hint' }, 'Select a bed in the table or on the map to see its plants.'));
  const map = new GardenMap({
    label: `Map of ${gd.name}`,
    describe: describePlant,
    onSelectPlant: (p) => { if (String(p.bed) !== String(state.selected)) selectBed(p.bed, p.key); else highlightPlantRow(p.key); },
    onSelectBed: (id) => selectBed(id),
  });
  const mapNote = h('div', { class: 'map-note' });
  const mapPanel = h('section', { class: 'panel panel-map', dataset: { panel: 'map' }, 'aria-label': 'Map' }, map.el, mapNote);
  const legendTitle = h('p', { class: 'legend-title' });
  const legendPanel = h('section', { class: 'panel panel-legend', dataset: { panel: 'legend' }, 'aria-label': 'Legend' }, legendTitle, legend(),
    h('p', { class: 'hint' }, 'Squares are beds, at the mean position of their plants; dots are plants.'));
  const trends = bedTrends(c, g, signal);
  const bedsTable = sortableTable({
    caption: 'Beds: values are averages over each bed’s plants',
    rowKey: (b) => b.id,
    onSelect: (b) => selectBed(b.id),
    cards: true,
    columns: [
      { key: 'name', label: 'Bed', title: true, className: 'wrap', value: (b) => bedLabel(b.line.name, b.id), cell: (b) => bedLabel(b.line.name, b.id) },
      { key: 'plant', label: 'Plant', className: 'wrap', value: (b) => b.line.plant, cell: (b) => plantCell(b.line.plant, b.line.variety) },
      { key: 'humidity', label: 'Soil humidity', numeric: true, value: (b) => b.line.soil_humidty, cell: (b) => fmt.pct(b.line.soil_humidty) },
      { key: 'yield', label: 'Yield', numeric: true, value: (b) => b.line.yield, cell: (b) => fmt.num(b.line.yield) },
      { key: 'harvest', label: 'Harvest', className: 'wrap', value: (b) => harvestWeeks(b.line.harvest), cell: (b) => harvestCell(b.line.harvest) },
      { key: 'health', label: 'Health', className: 'wrap', value: (b) => levelFor(b.line.health), cell: (b) => healthCell(b.line.health) },
      { key: 'placed', label: 'Position', numeric: true, className: 'wrap', value: (b) => placedCount(b), cell: (b) => placedText(b) },
    ],
  });
  const bedsPanel = h('section', { class: 'panel panel-beds', dataset: { panel: 'beds' }, 'aria-labelledby': 'beds-h' },
    h('h2', { id: 'beds-h' }, 'Beds'), progress, bedsProblem, bedsTable.el, trends.el);
  const plantsPanel = h('section', { class: 'panel panel-plants', dataset: { panel: 'plants' }, 'aria-labelledby': 'plants-h' }, plantsTitle, plantsBody);
  const needs = attention({ path: base + '/alerts', signal, canTask: () => admin, plantLabel: (a) => plantLabel(a), mapEl: map.el });
  const chart = historyChart({ c, g, signal });

  const toggles = h('fieldset', { class: 'toggles' }, h('legend', {}, 'Show'));
  const shown = new Set(layout.shown);
  for (const p of panels) {
    const id = 'show-' + p.id;
    const cb = h('input', { type: 'checkbox', id, checked: shown.has(p.id) });
    cb.addEventListener('change', async () => {
      if (cb.checked) shown.add(p.id); else shown.delete(p.id);
      applyPanels();
      if (!shown.size) return;
      try { await saveLayout(panels.filter((x) => shown.has(x.id)).map((x) => x.id)); } catch (err) { bedsProblem.replaceChildren(problemBox(err, 'Saving the layout')); }
    });
    toggles.append(h('span', { class: 'check' }, cb, h('label', { for: id }, p.label)));
  }
  const applyPanels = () => {
    for (const el of [mapPanel, legendPanel, bedsPanel, plantsPanel]) el.hidden = !shown.has(el.dataset.panel);
    if (shown.has('map')) map.fit();
  };

  const picker = aspectPicker();
  main.append(
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'Gardens'), ' › ', h('a', { href: `#/c/${c}` }, co.name), ' › ', gd.name),
    h('div', { class: 'title-row' }, h('h1', {}, gd.name),
      picker,
      h('a', { class: 'button', href: `#/c/${c}/g/${g}/logbook` }, 'Logbook'),
      admin ? h('a', { class: 'button', href: `#/c/${c}/g/${g}/admin` }, 'Administer') : null,
      h('details', { class: 'panels-menu' }, h('summary', {}, 'Panels'), toggles)),
    needs.el,
    h('div', { class: 'garden-layout' }, h('div', { class: 'col-map' }, mapPanel, legendPanel), h('div', { class: 'col-side' }, bedsPanel, plantsPanel, chart.el)));
  applyPanels();
  const offAspect = onAspect(() => {
    updateLegend();
    renderBeds();
    drawMarkers();
    if (state.selected) renderPlants(state.beds.get(String(state.selected)));
  });
  updateLegend();

  // The picture: its preview at once (the whole picture while its tiles are being
  // built, then the preview and tiles).
  const showPicture = (img) => {
    if (signal.aborted) { if (img) URL.revokeObjectURL(img.url); return; }
    if (img) map.setImage({ ...img, corners: { ...img.corners } });
    else mapNote.replaceChildren(h('p', { class: 'hint' }, 'This garden has no picture yet. ', admin ? h('a', { href: `#/c/${c}/g/${g}/admin` }, 'Upload one') : 'An admin can upload one.'));
    map.el.dataset.image = img ? 'shown' : 'none';
    performance.mark('gardend:picture-shown');
    if (img && !img.tiles && img.info.state !== 'failed') (img.later || whenTiled(c, g, signal)).then((tiled) => { if (tiled) showPicture(tiled); }, () => {});
  };
  picture.then(showPicture,
    (err) => { if (!signal.aborted) mapNote.replaceChildren(problemBox(err, 'The garden picture')); });

  // The beds stream, and each bed's plants as soon as its line is in.
  const started = performance.now();
  const plantLoads = [];
  try {
    const res = await get(base + '/beds', { signal, raw: true });
    state.total = Number(res.headers.get('X-Total-Count')) || null;
    await readLines(res, (line) => {
      if (line.badLine !== undefined) { bedsProblem.append(problemBox(new Error('The server sent a line that is not JSON; it was skipped.'))); return; }
      const b = { id: line.id, line, plants: null, error: line.error || null };
      state.beds.set(String(line.id), b);
      state.order.push(b);
      updateProgress();
      renderBeds();
      if (!b.error) plantLoads.push(loadPlants(b));
    });
    state.streamDone = true;
    updateProgress();
  } catch (err) {
    if (signal.aborted) return;
    state.streamDone = true;
    progress.textContent = '';
    bedsProblem.replaceChildren(problemBox(err, 'The beds'));
  }
  await Promise.all(plantLoads);
  if (signal.aborted) return;
  renderBeds();
  drawMarkers();
  if (state.selected) selectBed(state.selected, null, true);
  // Fully drawn: every bed is in and every bed's plants are on the map.
  main.dataset.drawn = 'true';
  performance.mark('gardend:garden-drawn', { detail: { ms: performance.now() - started } });
  settleCheck();

  return () => { for (const t of state.timers) clearTimeout(t); cancelAnimationFrame(state.frame); map.destroy(); offAspect(); picker.querySelector('select').detach(); };

  function updateLegend() {
    const a = aspects.find((x) => x.id === aspect());
    legendTitle.textContent = a.id === 'worst' ? 'Colour: the worst health level of each plant and bed' : `Colour: the ${a.label.toLowerCase()} level of each plant and bed`;
  }

  function updateProgress() {
    const n = state.order.length;
    const errors = state.order.filter((b) => b.error).length;
    const total = state.total ?? (state.streamDone ? n : null);
    let text = total !== null ? `${n} of ${total} beds` : `${n} beds so far`;
    if (state.streamDone && n === 0) text = 'No beds registered yet.' + (admin ? ' Register them under Administer.' : '');
    if (errors) text += ` (${errors} could not be read)`;
    progress.textContent = text;
    progress.dataset.count = String(n);
    progress.dataset.done = String(state.streamDone);
  }

  async function loadPlants(b, attempt = 0) {
    try {
      const res = await get(paths.plants(c, g, b.id), { signal });
      b.plants = res.plants;
      b.plantsError = null;
    } catch (err) {
      if (signal.aborted) return;
      b.plantsError = err;
    }
    if (signal.aborted) return;
    scheduleDraw(b);
    const waiting = (b.plants || []).some((p) => p.pointcloud === 'downloading');
    if (waiting) {
      const t = setTimeout(() => { state.timers.delete(t); loadPlants(b, attempt + 1); }, Math.min(1500 * 1.5 ** attempt, 15000));
      state.timers.add(t);
    }
  }

  // scheduleDraw redraws the table and markers once per frame however many beds'
  // plants arrived in it.
  function scheduleDraw(b) {
    state.dirty = state.dirty || new Set();
    state.dirty.add(String(b.id));
    if (state.frame) return;
    state.frame = requestAnimationFrame(() => {
      state.frame = null;
      const dirty = state.dirty;
      state.dirty = new Set();
      renderBeds();
      drawMarkers();
      if (state.selected && dirty.has(String(state.selected))) renderPlants(state.beds.get(String(state.selected)));
      if (main.dataset.drawn) settleCheck();
    });
  }

  function settleCheck() {
    const waiting = state.order.some((b) => (b.plants || []).some((p) => p.pointcloud === 'downloading'));
    main.dataset.settled = String(!waiting);
    if (!waiting && state.order.length) announce('Every plant with a point cloud is on the map.');
  }

  function placedCount(b) {
    if (b.plants) return b.plants.filter((p) => p.plant_coords).length;
    return b.line.plant_coords ? b.line.plant_coords.length : null;
  }

  function placedText(b) {
    if (b.error) return h('span', { class: 'error-text' }, b.error);
    const n = placedCount(b);
    if (!b.plants) return n === null ? '–' : String(n);
    const down = b.plants.filter((p) => p.pointcloud === 'downloading').length;
    return h('span', {}, `${n} of ${b.plants.length} placed`, down ? [' ', h('span', { class: 'sub' }, `(${down} downloading)`)] : null);
  }

  function renderBeds() {
    bedsTable.setRows(state.order.map((b) => ({ ...b, rowClass: b.error ? 'error-row' : undefined })));
    trends.update(state.order.map((b) => ({ id: b.id, name: b.line.name, error: b.error })));
    bedsTable.select(state.selected);
  }

  function bedPosition(b) {
    const pts = b.plants ? b.plants.filter((p) => p.plant_coords).map((p) => p.plant_coords) : (b.line.plant_coords || []);
    return mean(pts);
  }

  function drawMarkers() {
    const beds = [];
    const plants = [];
    for (const b of state.order) {
      const pos = bedPosition(b);
      const name = bedLabel(b.line.name, b.id);
      if (pos) beds.push({ id: b.id, label: mapLabel(name), title: name, lat: pos.lat, lon: pos.lon, cls: levelClass(b.line.health) });
      for (const [i, p] of (b.plants || []).entries()) {
        if (!p.plant_coords) continue;
        plants.push({ key: `${b.id}/${p.id}`, bed: b.id, index: i + 1, lat: p.plant_coords.lat, lon: p.plant_coords.lon, cls: levelClass(p.health), plant: p });
      }
    }
    map.setBeds(beds);
    map.setPlants(plants);
    needs.mark();
    map.highlightBed(state.selected);
    map.el.dataset.beds = String(beds.length);
    map.el.dataset.plants = String(plants.length);
  }

  function describePlant(m) {
    const p = m.plant;
    return h('dl', { class: 'facts' },
      h('dt', {}, 'Plant'), h('dd', {}, `${fmt.text(p.plant)} (${fmt.text(p.variety)})`),
      h('dt', {}, 'Bed'), h('dd', {}, `${bedLabel(p.bed_name, m.bed)}, plant ${m.index}`),
      h('dt', {}, 'Soil humidity'), h('dd', {}, fmt.pct(p.soil_humidty)),
      h('dt', {}, 'Yield'), h('dd', {}, fmt.num(p.yield)),
      h('dt', {}, 'Harvest'), h('dd', {}, harvestText(p.harvest)),
      h('dt', {}, 'Health'), h('dd', {}, healthCell(p.health)));
  }

  function selectBed(id, plantKey, quiet) {
    const b = state.beds.get(String(id));
    if (!b) return;
    state.selected = String(id);
    bedsTable.select(id);
    map.highlightBed(id);
    const hash = `#/c/${c}/g/${g}/b/${id}`;
    if (location.hash !== hash) history.replaceState(null, '', hash);
    renderPlants(b);
    if (plantKey) { map.pin(plantKey); highlightPlantRow(plantKey); }
    if (!quiet) announce(`${bedLabel(b.line.name, id)} selected: ${b.plants ? b.plants.length + ' plants' : 'no plants read'}.`);
  }

  function highlightPlantRow(key) {
    const row = plantsBody.querySelector(`tr[data-key="${CSS.escape(key)}"]`);
    plantsBody.querySelectorAll('tr[aria-selected="true"]').forEach((r) => r.setAttribute('aria-selected', 'false'));
    if (row) { row.setAttribute('aria-selected', 'true'); row.scrollIntoView({ block: 'nearest' }); }
  }

  function plantLabel(a) {
    const i = (state.beds.get(String(a.bed))?.plants || []).findIndex((p) => p.id === a.plant);
    return i < 0 ? null : `plant ${i + 1}`;
  }

  function renderPlants(b) {
    chart.show(b);
    const name = bedLabel(b.line.name, b.id);
    plantsTitle.textContent = `Plants of ${name}`;
    const links = h('p', { class: 'actions' },
      h('a', { class: 'button', href: `#/c/${c}/g/${g}/b/${b.id}/log` }, `Logbook and quick entry: ${name}`),
      b.error || b.plantsError ? null : h('a', { class: 'button', href: `#/c/${c}/g/${g}/b/${b.id}/3d` }, `View ${name} in 3D`));
    if (b.error) { clear(plantsBody, links, problemBox(new Error(b.error), name)); return; }
    if (b.plantsError) { clear(plantsBody, links, problemBox(b.plantsError, `The plants of ${name}`)); return; }
    if (!b.plants) { clear(plantsBody, h('p', { class: 'loading' }, 'Loading plants…')); return; }
    const rows = b.plants.map((p, i) => ({ ...p, index: i + 1, key: `${b.id}/${p.id}` }));
    const t = sortableTable({
      caption: `${rows.length} plants, in name order`,
      rowKey: (p) => p.key,
      onSelect: (p) => { if (p.plant_coords) map.pin(p.key); highlightPlantRow(p.key); },
      empty: 'This bed has no plants.',
      cards: true,
      columns: [
        { key: 'index', label: 'Plant', title: true, value: (p) => p.index, cell: (p) => h('a', { href: `#/c/${c}/g/${g}/b/${b.id}/p/${encodeURIComponent(p.id)}`, 'aria-label': `Plant ${p.index} of ${name}: logbook` }, `#${p.index}`) },
        { key: 'plant', label: 'Species', className: 'wrap', value: (p) => p.plant, cell: (p) => plantCell(p.plant, p.variety) },
        { key: 'soil_humidty', label: 'Soil humidity', numeric: true, cell: (p) => fmt.pct(p.soil_humidty) },
        { key: 'yield', label: 'Yield', numeric: true, cell: (p) => fmt.num(p.yield) },
        { key: 'harvest', label: 'Harvest', className: 'wrap', value: (p) => harvestWeeks(p.harvest), cell: (p) => harvestCell(p.harvest) },
        { key: 'health', label: 'Health', className: 'wrap', value: (p) => levelFor(p.health), cell: (p) => healthCell(p.health) },
        { key: 'pointcloud', label: 'Position', className: 'wrap', cell: (p) => h('span', { class: 'pc-' + (p.pointcloud || 'none') }, cloudText[p.pointcloud] || '–') },
      ],
    });
    clear(plantsBody, links, t.el);
    t.setRows(rows);
  }
}
