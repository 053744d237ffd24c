import { get, post, del, paths } from './api.js';
import { h, form, setTitle, confirmDialog, problemBox, announce } from './ui.js';
import { sortableTable } from './table.js';
import { GardenMap } from './map.js';
import { gardenImage, naturalSize } from './images.js';
import { permissionsPanel } from './perms.js';
import { go } from './main.js';

const cornerNames = [['top_left', 'Top left'], ['top_right', 'Top right'], ['bottom_left', 'Bottom left']];

// Administration of a garden, for its admins: the picture and its corners, the beds
// (projects of the spatial server), permissions, deletion.
export async function gardenAdmin(main, [c, g], signal) {
  const base = paths.garden(c, g);
  const [gd, co, role] = await Promise.all([get(base, { signal }), get(paths.company(c), { signal }), get(base + '/role', { signal })]);
  setTitle('Administer ' + gd.name, co.name);
  main.append(
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'Gardens'), ' › ', h('a', { href: `#/c/${c}` }, co.name), ' › ',
      h('a', { href: `#/c/${c}/g/${g}` }, gd.name), ' › ', 'Administer'),
    h('h1', {}, `Administer ${gd.name}`));
  if (role.role !== 'admin') {
    main.append(h('p', { class: 'problem' }, 'Only admins of this garden or its company can administer it.'));
    return;
  }
  const cleanup = [];
  main.append(await picturePanel(c, g, base, gd.image_path, signal, cleanup));
  const beds = bedsPanel(base, signal);
  const perms = permissionsPanel(base, 'garden', signal);
  main.append(beds.el, perms.el);
  // Both lists grow the page when their first answers come; after that it holds still
  // (data-loaded, which the browser tests wait for before they click).
  Promise.all([beds.loaded, perms.loaded]).then(() => { if (!signal.aborted) main.dataset.loaded = 'true'; });
  const box = h('div');
  const remove = h('button', { type: 'button', class: 'danger' }, 'Delete garden');
  remove.addEventListener('click', async () => {
    if (!await confirmDialog(`Delete the garden “${gd.name}” with its beds, picture and permissions? This cannot be undone.`, 'Delete garden')) return;
    try {
      await del(base);
      go(`#/c/${c}`);
    } catch (err) {
      box.replaceChildren(problemBox(err));
    }
  });
  main.append(h('section', { class: 'card danger-zone' }, h('h2', {}, 'Delete'), remove, box));
  return () => cleanup.forEach((f) => f());
}

// unraced is a picture as gardenImage gives it, for a page that places it rather than
// zooms into it: the tiled version that may come later is not wanted here.
function unraced(img) {
  img?.later?.then((tiled) => { if (tiled) URL.revokeObjectURL(tiled.url); });
  return img;
}

async function picturePanel(c, g, base, hasImage, signal, cleanup) {
  let current = null;
  if (hasImage) current = unraced(await gardenImage(c, g, signal));
  const map = new GardenMap({ label: 'Picture placement preview', describe: () => h('span') });
  cleanup.push(() => map.destroy());
  cleanup.push(() => current && URL.revokeObjectURL(current.url));
  let chosen = null; // {dataURL, url, width, height}
  let corners = current ? { ...current.corners } : null;
  const inputs = {};
  const fieldsets = cornerNames.map(([name, label]) => {
    const lat = h('input', { type: 'number', step: 'any', min: -90, max: 90, id: `${name}-lat`, required: true, inputmode: 'decimal' });
    const lon = h('input', { type: 'number', step: 'any', min: -180, max: 180, id: `${name}-lon`, required: true, inputmode: 'decimal' });
    inputs[name] = { lat, lon };
    const onInput = () => {
      const v = { lat: parseFloat(lat.value), lon: parseFloat(lon.value) };
      if (Number.isFinite(v.lat) && Number.isFinite(v.lon)) { corners = { ...corners, [name]: v }; preview(); }
    };
    lat.addEventListener('input', onInput);
    lon.addEventListener('input', onInput);
    return h('fieldset', { class: 'corner' }, h('legend', {}, label),
      h('label', { for: `${name}-lat` }, 'Latitude'), lat, h('label', { for: `${name}-lon` }, 'Longitude'), lon);
  });
  const fillInputs = () => {
    for (const [name] of cornerNames) {
      if (!corners?.[name]) continue;
      inputs[name].lat.value = corners[name].lat.toFixed(8);
      inputs[name].lon.value = corners[name].lon.toFixed(8);
    }
  };
  fillInputs();
  const file = h('input', { type: 'file', id: 'picture-file', accept: 'image/png' });
  const box = h('div');
  const save = h('button', { type: 'button', class: 'primary', disabled: true }, 'Save picture');
  const status = h('p', { class: 'hint' }, current ? 'The current picture is shown. Choose a PNG to replace it.' : 'This garden has no picture yet. Choose a PNG.');

  function preview() {
    const img = chosen || current;
    if (!img || !corners || !cornerNames.every(([n]) => corners[n])) return;
    map.setImage({ url: img.url, width: img.width, height: img.height, tiles: chosen ? null : img.tiles, corners: { ...corners }, preview: !!chosen });
    map.editCorners((cs) => { corners = { ...cs }; fillInputs(); save.disabled = !chosen && !current; });
    save.disabled = false;
  }

  file.addEventListener('change', async () => {
    box.replaceChildren();
    const f = file.files[0];
    if (!f) return;
    if (f.type && f.type !== 'image/png') { box.replaceChildren(problemBox(new Error('Only PNG pictures are supported.'))); return; }
    const dataURL = await new Promise((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(r.result);
      r.onerror = () => reject(r.error);
      r.readAsDataURL(f);
    });
    if (chosen) URL.revokeObjectURL(chosen.url);
    const url = URL.createObjectURL(f);
    try {
      const size = await naturalSize(url);
      chosen = { dataURL, url, ...size };
    } catch (err) {
      box.replaceChildren(problemBox(err));
      return;
    }
    if (!corners) {
      status.textContent = 'Enter the latitude and longitude of three corners of the picture; then drag the corner handles on the preview to fine-tune.';
    } else {
      status.textContent = 'Preview: drag the corner handles (or use the arrow keys on them) until the picture lines up, then save.';
    }
    preview();
  });
  cleanup.push(() => chosen && URL.revokeObjectURL(chosen.url));

  save.addEventListener('click', async () => {
    box.replaceChildren();
    if (!corners || !cornerNames.every(([n]) => corners[n])) { box.replaceChildren(problemBox(new Error('Enter all three corners.'))); return; }
    save.disabled = true;
    try {
      let dataURL = chosen?.dataURL;
      if (!dataURL) dataURL = (await get(base + '/image', { signal })).image; // corners only
      const coordinates = cornerNames.map(([n]) => ({ name: n, latitude: corners[n].lat, longitude: corners[n].lon }));
      await post(base + '/image', { image: dataURL, coordinates });
      if (current) URL.revokeObjectURL(current.url);
      current = unraced(await gardenImage(c, g, signal));
      if (chosen) URL.revokeObjectURL(chosen.url);
      chosen = null;
      file.value = '';
      status.textContent = 'Saved. This is the garden’s picture now.';
      announce('The garden picture was saved.');
      preview();
    } catch (err) {
      box.replaceChildren(problemBox(err, 'Saving the picture'));
    } finally {
      save.disabled = false;
    }
  });

  const section = h('section', { class: 'card', 'aria-labelledby': 'pic-h' },
    h('h2', { id: 'pic-h' }, 'Picture'),
    status,
    h('div', { class: 'field' }, h('label', { for: 'picture-file' }, 'PNG picture'), file),
    h('div', { class: 'corners' }, fieldsets),
    h('div', { class: 'preview-map' }, map.el),
    box, h('div', { class: 'actions' }, save));
  requestAnimationFrame(preview);
  return section;
}

// bedsPanel lists the spatial server's projects with the beds registered from them;
// like permissionsPanel it returns the panel (el) and its first answer (loaded).
function bedsPanel(base, signal) {
  const box = h('div');
  const table = sortableTable({
    caption: 'Projects of the spatial server; each registered project is a bed of this garden',
    rowKey: (r) => r.uuid,
    empty: 'The spatial server lists no projects.',
    columns: [
      { key: 'name', label: 'Project' },
      { key: 'uuid', label: 'UUID', cell: (r) => h('code', {}, r.uuid) },
      { key: 'bed', label: 'Bed', value: (r) => r.bed?.id ?? null, cell: (r) => (r.bed ? `${r.bed.name || r.name || 'unnamed'} (id ${r.bed.id})` : 'not registered') },
      { key: 'action', label: 'Action', value: () => null, cell: action },
    ],
  });
  function action(r) {
    if (r.bed) {
      const name = r.bed.name || r.name || r.uuid;
      const b = h('button', { type: 'button', class: 'danger small', 'aria-label': `Remove bed ${name}` }, 'Remove');
      b.addEventListener('click', async () => {
        if (!await confirmDialog(`Remove the bed ${name} from this garden? Its cached point clouds go too; the spatial server keeps the project, and its logs stay (shown as of a removed bed).`, 'Remove bed')) return;
        await act(() => del(`${base}/beds/${r.bed.id}`), `The bed ${name} was removed.`);
      });
      return b;
    }
    const b = h('button', { type: 'button', class: 'small', 'aria-label': `Register ${r.name || r.uuid} as a bed` }, 'Register');
    b.addEventListener('click', () => act(() => post(`${base}/beds`, { uuid: r.uuid, name: r.name }), `${r.name || r.uuid} is now a bed of this garden.`));
    return b;
  }
  async function act(fn, done) {
    box.replaceChildren();
    try { await fn(); announce(done); } catch (err) { box.replaceChildren(problemBox(err)); }
    await refresh();
  }
  // Only the latest refresh shows its answer (see permissionsPanel).
  let latest = 0;
  async function refresh() {
    const mine = ++latest;
    try {
      const res = await get(base + '/spatial-projects', { signal });
      if (mine !== latest) return;
      const byUUID = new Map(res.beds.map((b) => [b.uuid, b]));
      const rows = res.projects.map((p) => ({ ...p, bed: byUUID.get(p.uuid) || null }));
      for (const b of res.beds) if (!res.projects.some((p) => p.uuid === b.uuid)) rows.push({ uuid: b.uuid, name: '(not listed by the spatial server)', bed: b });
      table.setRows(rows);
    } catch (err) {
      if (err.name !== 'AbortError' && mine === latest) box.replaceChildren(problemBox(err, 'The spatial server’s projects'));
    }
  }
  const loaded = refresh();
  const manual = form({
    className: 'inline', submit: 'Register',
    fields: [{ name: 'uuid', label: 'Project UUID', required: true, autocomplete: 'off' }, { name: 'name', label: 'Bed name (optional)' }],
    onSubmit: async (v, f) => { await post(`${base}/beds`, { uuid: v.uuid.trim(), name: v.name }); f.reset(); announce('The bed was registered.'); await refresh(); },
  });
  const el = h('section', { class: 'card', 'aria-labelledby': 'beds-admin-h' },
    h('h2', { id: 'beds-admin-h' }, 'Beds'), table.el, box,
    h('details', {}, h('summary', {}, 'Register a project by its UUID'), manual));
  return { el, loaded };
}
