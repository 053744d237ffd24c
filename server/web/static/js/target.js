import { get, paths } from './api.js';
import { h, setTitle, problemBox, fmt } from './ui.js';
import { sortableTable } from './table.js';
import { bedsOf, plantsOf, bedName, plantName } from './gardendata.js';
import { aspectPicker, onAspect, healthCell, harvestText, harvestCell, harvestWeeks, levelFor, levelWord, bedLabel } from './health.js';
import { quickEntry, outboxPanel } from './quickentry.js';
import { timeline } from './logbook.js';

// A bed's and a plant's page: what the robot measured beside what people noted,
// with quick entry on top for the gardener standing in front of it.

const cloudText = { stored: 'placed', downloading: 'position coming (point cloud downloading)', failed: 'unknown (point cloud download failed)', none: 'unknown' };

async function common(c, g, signal) {
  const base = paths.garden(c, g);
  const [gd, co, role] = await Promise.all([get(base, { signal }), get(paths.company(c), { signal }), get(base + '/role', { signal })]);
  return { gd, co, admin: role.role === 'admin' };
}

function facts(pairs) {
  return h('dl', { class: 'facts values' }, pairs.flatMap(([k, v, key]) => [h('dt', {}, k), h('dd', { dataset: { fact: key || k } }, v)]));
}

function layout(main, { c, g, gd, co, title, crumbs, qe, ob, values, tl }) {
  main.append(
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'Gardens'), ' › ', h('a', { href: `#/c/${c}` }, co.name), ' › ',
      h('a', { href: `#/c/${c}/g/${g}` }, gd.name), ' › ', ...crumbs),
    h('div', { class: 'title-row' }, h('h1', {}, title), h('a', { class: 'button', href: `#/c/${c}/g/${g}/logbook` }, 'Garden logbook')),
    h('div', { class: 'target-layout' },
      h('div', { class: 'col-entry' }, qe, ob),
      h('div', { class: 'col-more' }, values),
      h('section', { class: 'card col-logs', 'aria-labelledby': 'logs-h' }, h('h2', { id: 'logs-h' }, 'Logbook'), tl.el)));
}

// bedPage: the bed's averages and its plants beside its logs.
export async function bedPage(main, [c, g, b], signal) {
  const { gd, co, admin } = await common(c, g, signal);
  let beds = new Map();
  let bedsErr = null;
  try { beds = await bedsOf(c, g); } catch (err) { bedsErr = err; }
  if (signal.aborted) return null;
  const line = beds.get(String(b));
  const name = line ? bedLabel(line.name, b) : bedName(beds, b);
  setTitle(name, gd.name);
  const tl = timeline({ c, g, query: { bed: b }, admin, beds, signal, emptyText: `Nothing noted for ${name} yet.` });
  const qe = quickEntry({ c, g, bed: b, what: name, admin, onSaved: () => tl.reload() });
  const ob = outboxPanel({ c, g, onSaved: () => tl.reload() });
  const valuesBox = h('div');
  const plantsBox = h('div', {}, h('p', { class: 'loading' }, 'Reading the plants…'));
  const picker = aspectPicker();
  const values = h('section', { class: 'card', 'aria-labelledby': 'values-h' }, h('h2', { id: 'values-h' }, 'Measured'), picker, valuesBox,
    h('h3', {}, 'Plants'), plantsBox, h('p', { class: 'actions' }, h('a', { class: 'button', href: `#/c/${c}/g/${g}/b/${b}` }, 'On the map'),
      line && !line.error ? h('a', { class: 'button', href: `#/c/${c}/g/${g}/b/${b}/3d` }, 'In 3D') : null));
  let plants = null;
  const plantsTable = sortableTable({
    caption: 'Each plant’s own values; open one for its logbook',
    rowKey: (p) => p.id,
    cards: true,
    empty: 'This bed has no plants.',
    columns: [
      { key: 'index', label: 'Plant', title: true, cell: (p) => h('a', { href: `#/c/${c}/g/${g}/b/${b}/p/${encodeURIComponent(p.id)}` }, plantName(p)) },
      { key: 'soil_humidty', label: 'Soil humidity', numeric: true, cell: (p) => fmt.pct(p.soil_humidty) },
      { key: 'harvest', label: 'Harvest', className: 'wrap', value: (p) => harvestWeeks(p.harvest), cell: (p) => harvestCell(p.harvest) },
      { key: 'health', label: 'Health', className: 'wrap', value: (p) => levelFor(p.health), cell: (p) => healthCell(p.health) },
      { key: 'pointcloud', label: 'Position', className: 'wrap', cell: (p) => positionText(p) },
    ],
  });
  const render = () => {
    if (bedsErr) valuesBox.replaceChildren(problemBox(bedsErr, 'The bed’s values'));
    else if (!line) valuesBox.replaceChildren(h('p', { class: 'notice' }, 'This bed is no longer registered in the garden; its logs stay.'));
    else if (line.error) valuesBox.replaceChildren(problemBox(new Error(line.error), name));
    else {
      valuesBox.replaceChildren(facts([
        ['Plant', `${fmt.text(line.plant)}${line.variety ? ', ' + line.variety : ''}`],
        ['Soil humidity', fmt.pct(line.soil_humidty)],
        ['Yield', fmt.num(line.yield)],
        ['Harvest', harvestText(line.harvest)],
        ['Health', healthCell(line.health)],
        ['Position', plants ? `${plants.filter((p) => p.plant_coords).length} of ${plants.length} plants placed` : '–'],
      ]));
    }
    if (plants) plantsTable.setRows(plants);
  };
  const off = onAspect(render);
  render();
  layout(main, { c, g, gd, co, title: name, crumbs: [name], qe, ob, values, tl });
  tl.reload();
  if (line && !line.error) {
    plantsOf(c, g, b).then((ps) => {
      if (signal.aborted) return;
      plants = ps;
      plantsBox.replaceChildren(plantsTable.el);
      render();
    }, (err) => { if (!signal.aborted) plantsBox.replaceChildren(problemBox(err, 'The plants')); });
  } else {
    plantsBox.replaceChildren();
  }
  return () => { off(); picker.querySelector('select').detach(); tl.destroy(); qe.detach(); ob.detach(); };
}

// plantPage: a plant's values beside its logs.
export async function plantPage(main, [c, g, b, rawID], signal) {
  const id = decodeURIComponent(rawID);
  const { gd, co, admin } = await common(c, g, signal);
  const beds = await bedsOf(c, g).catch(() => new Map());
  let plants = null;
  let err = null;
  try { plants = await plantsOf(c, g, b); } catch (e) { err = e; }
  if (signal.aborted) return null;
  const bed = bedName(beds, b);
  const p = plants?.find((x) => x.id === id);
  const name = p ? `${plantName(p)} in ${bed}` : `A plant of ${bed}`;
  setTitle(name, gd.name);
  const tl = timeline({ c, g, query: { bed: b, plant: id }, admin, beds, signal, emptyText: 'Nothing noted for this plant yet.' });
  const qe = quickEntry({ c, g, bed: b, plant: id, what: p ? plantName(p) : 'this plant', admin, onSaved: () => tl.reload() });
  const ob = outboxPanel({ c, g, onSaved: () => tl.reload() });
  const valuesBox = h('div');
  const picker = aspectPicker();
  const render = () => {
    if (err) { valuesBox.replaceChildren(problemBox(err, 'The plant’s values')); return; }
    if (!p) { valuesBox.replaceChildren(h('p', { class: 'notice' }, 'The bed’s latest scan does not show this plant; its logs stay.')); return; }
    const aspects = Array.isArray(p.health) ? p.health.map((x) => `${x.type}: ${levelWord(x.loglevel)} (${x.loglevel})`).join(', ') : '';
    valuesBox.replaceChildren(facts([
      ['Bed', h('a', { href: `#/c/${c}/g/${g}/b/${b}/log` }, bed)],
      ['Plant', `${fmt.text(p.plant)}${p.variety ? ', ' + p.variety : ''}`],
      ['Soil humidity', fmt.pct(p.soil_humidty)],
      ['Yield', fmt.num(p.yield)],
      ['Harvest', harvestText(p.harvest)],
      ['Health', h('span', {}, healthCell(p.health), aspects ? h('span', { class: 'sub' }, aspects) : null)],
      ['Position', positionText(p)],
    ]));
  };
  const off = onAspect(render);
  render();
  const values = h('section', { class: 'card', 'aria-labelledby': 'values-h' }, h('h2', { id: 'values-h' }, 'Measured'), picker, valuesBox,
    h('p', { class: 'actions' }, h('a', { class: 'button', href: `#/c/${c}/g/${g}/b/${b}` }, 'On the map')));
  layout(main, { c, g, gd, co, title: name, crumbs: [h('a', { href: `#/c/${c}/g/${g}/b/${b}/log` }, bed), ' › ', p ? plantName(p) : 'plant'], qe, ob, values, tl });
  tl.reload();
  return () => { off(); picker.querySelector('select').detach(); tl.destroy(); qe.detach(); ob.detach(); };
}

function positionText(p) {
  if (p.plant_coords) return `${p.plant_coords.lat.toFixed(6)}, ${p.plant_coords.lon.toFixed(6)}`;
  return h('span', { class: 'pc-' + (p.pointcloud || 'none') }, cloudText[p.pointcloud] || 'unknown');
}
