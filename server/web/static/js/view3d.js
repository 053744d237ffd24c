import { get, request, paths, ApiError } from './api.js';
import { h, setTitle, problemBox, fmt } from './ui.js';
import { parsePLY } from './ply.js';
import { harvestText, healthCell, levelClass } from './health.js';

// Level colours for plants whose cloud has no colour of its own (as in app.css).
const levelRGB = { lv0: 0x1a9850, lv1: 0x91cf60, lv2: 0xd9a800, lv3: 0xf46d43, lv4: 0xd73027, lvn: 0x8c8c8c };

// The 3D view of a bed: every stored point cloud of its plants, placed in the bed's
// map frame by the transform gardend reports with each cloud, coloured by the cloud's
// own colours. Orbit with the mouse or a finger; pick a plant (click, or the list) to
// see its values. three.js is loaded only here.
export async function bed3d(main, [c, g, b], signal) {
  const base = paths.garden(c, g);
  const [gd, co] = await Promise.all([get(base, { signal }), get(paths.company(c), { signal })]);
  setTitle(`Bed ${b} in 3D`, gd.name);
  const status = h('p', { class: 'progress', role: 'status', 'aria-live': 'polite' }, 'Loading the 3D view…');
  const info = h('div', { class: 'pick-info', 'aria-live': 'polite' }, h('p', { class: 'hint' }, 'Pick a plant in the picture or in the list to see its values.'));
  const list = h('ul', { class: 'plant-list' });
  const stage = h('div', { class: 'stage' });
  const crumb = document.createTextNode(`Bed ${b} in 3D`);
  const title = h('h1', {}, `Bed ${b} in 3D`);
  main.append(
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'Gardens'), ' › ', h('a', { href: `#/c/${c}` }, co.name), ' › ',
      h('a', { href: `#/c/${c}/g/${g}/b/${b}` }, gd.name), ' › ', crumb),
    title,
    status,
    h('div', { class: 'view3d' }, stage, h('aside', { class: 'side3d', 'aria-label': 'Plants' }, info, h('h2', {}, 'Plants'), list)));

  const [THREE, { OrbitControls }, plantsRes] = await Promise.all([
    import('../vendor/three/three.module.js'),
    import('../vendor/three/OrbitControls.js'),
    get(paths.plants(c, g, b), { signal }),
  ]);
  if (signal.aborted) return;
  const plants = plantsRes.plants;
  // The bed as its people call it (the plants carry its name).
  const bedName = plants.find((p) => p.bed_name)?.bed_name;
  if (bedName) {
    crumb.textContent = title.textContent = `${bedName} in 3D`;
    setTitle(`${bedName} in 3D`, gd.name);
  }
  let renderer;
  try {
    renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  } catch {
    status.replaceChildren(problemBox(new Error('This browser cannot draw 3D graphics (WebGL is unavailable or switched off).')));
    return;
  }
  renderer.setPixelRatio(Math.min(devicePixelRatio, 2));
  const canvas = renderer.domElement;
  canvas.setAttribute('aria-label', `Point clouds of ${bedName || 'bed ' + b}`);
  canvas.setAttribute('role', 'img');
  canvas.tabIndex = 0;
  stage.append(canvas);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0xf4f1e8);
  const camera = new THREE.PerspectiveCamera(50, 1, 0.01, 1000);
  camera.up.set(0, 0, 1); // the map frame: x east, y north, z up
  const controls = new OrbitControls(camera, canvas);
  controls.listenToKeyEvents(canvas);
  const group = new THREE.Group();
  scene.add(group);
  const draw = () => renderer.render(scene, camera);
  controls.addEventListener('change', draw);
  const resize = new ResizeObserver(() => {
    const w = stage.clientWidth, hh = stage.clientHeight;
    renderer.setSize(w, hh, false);
    camera.aspect = w / Math.max(hh, 1);
    camera.updateProjectionMatrix();
    draw();
  });
  resize.observe(stage);

  const objects = new Map();
  const buttons = new Map();
  plants.forEach((p, i) => {
    const label = `${i + 1}. ${p.plant || 'plant'}`;
    const btn = h('button', { type: 'button', class: 'link', disabled: p.pointcloud !== 'stored' }, label,
      p.pointcloud !== 'stored' ? h('span', { class: 'hint' }, ` (${p.pointcloud === 'downloading' ? 'downloading' : 'no point cloud'})`) : null);
    btn.addEventListener('click', () => pick(p.id));
    buttons.set(p.id, btn);
    list.append(h('li', {}, btn));
  });

  const stored = plants.filter((p) => p.pointcloud === 'stored');
  let done = 0, failed = 0, points = 0;
  const update = () => { status.textContent = `${done} of ${stored.length} point clouds loaded` + (failed ? `, ${failed} could not be loaded` : '') + ` (${points.toLocaleString()} points).`; };
  update();
  const queue = stored.slice();
  const worker = async () => {
    for (let p; (p = queue.shift());) {
      try {
        const res = await request('GET', paths.pointcloud(c, g, b, p.id), { signal, raw: true });
        const transform = res.headers.get('Gardend-Transform');
        const cloud = parsePLY(await res.arrayBuffer());
        if (signal.aborted) return;
        add(p, cloud, transform);
        points += cloud.count;
      } catch (err) {
        if (signal.aborted) return;
        failed++;
        buttons.get(p.id)?.append(h('span', { class: 'error-text' }, ` (${err instanceof ApiError ? err.message : 'unreadable: ' + err.message})`));
      }
      done++;
      update();
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  if (signal.aborted) return;
  frame();
  stage.dataset.drawn = String(group.children.length);

  function add(p, cloud, transform) {
    const geom = new THREE.BufferGeometry();
    geom.setAttribute('position', new THREE.BufferAttribute(cloud.positions, 3));
    let material;
    if (cloud.colors) {
      geom.setAttribute('color', new THREE.BufferAttribute(cloud.colors, 3));
      material = new THREE.PointsMaterial({ size: 3, sizeAttenuation: false, vertexColors: true });
    } else {
      material = new THREE.PointsMaterial({ size: 3, sizeAttenuation: false, color: levelRGB[levelClass(p.health)] });
    }
    const obj = new THREE.Points(geom, material);
    if (transform) {
      const [tx, ty, tz, qx, qy, qz, qw] = transform.split(' ').map(Number);
      obj.position.set(tx, ty, tz);
      obj.quaternion.set(qx, qy, qz, qw).normalize();
    }
    obj.userData.plant = p;
    group.add(obj);
    objects.set(p.id, obj);
  }

  function frame() {
    const box = new THREE.Box3().setFromObject(group);
    if (box.isEmpty()) {
      status.textContent = stored.length ? 'None of the point clouds could be loaded.' : 'No plant of this bed has a stored point cloud yet. Downloads start when the bed is opened; come back shortly.';
      draw();
      return;
    }
    const centre = box.getCenter(new THREE.Vector3());
    const size = box.getSize(new THREE.Vector3()).length();
    controls.target.copy(centre);
    camera.position.set(centre.x - size * 0.6, centre.y - size * 0.9, centre.z + size * 0.7);
    camera.near = size / 1000;
    camera.far = size * 20;
    camera.updateProjectionMatrix();
    controls.update();
    const ray = new THREE.Raycaster();
    ray.params.Points.threshold = size / 150;
    let down = null;
    canvas.addEventListener('pointerdown', (e) => { down = { x: e.clientX, y: e.clientY }; });
    canvas.addEventListener('pointerup', (e) => {
      if (!down || Math.hypot(e.clientX - down.x, e.clientY - down.y) > 4) return;
      const r = canvas.getBoundingClientRect();
      ray.setFromCamera(new THREE.Vector2(((e.clientX - r.left) / r.width) * 2 - 1, -((e.clientY - r.top) / r.height) * 2 + 1), camera);
      const hit = ray.intersectObjects(group.children, false)[0];
      if (hit) pick(hit.object.userData.plant.id);
    });
    draw();
  }

  function pick(id) {
    const p = plants.find((x) => x.id === id);
    if (!p) return;
    for (const [pid, obj] of objects) obj.material.size = pid === id ? 6 : 2;
    for (const [pid, btn] of buttons) btn.setAttribute('aria-pressed', String(pid === id));
    const i = plants.indexOf(p) + 1;
    info.replaceChildren(h('h2', {}, `Plant ${i}`), h('dl', { class: 'facts' },
      h('dt', {}, 'Plant'), h('dd', {}, `${fmt.text(p.plant)} (${fmt.text(p.variety)})`),
      h('dt', {}, 'Soil humidity'), h('dd', {}, fmt.pct(p.soil_humidty)),
      h('dt', {}, 'Yield'), h('dd', {}, fmt.num(p.yield)),
      h('dt', {}, 'Harvest'), h('dd', {}, harvestText(p.harvest)),
      h('dt', {}, 'Health'), h('dd', {}, healthCell(p.health))));
    info.dataset.plant = id;
    draw();
  }

  return () => {
    resize.disconnect();
    controls.dispose();
    for (const obj of objects.values()) { obj.geometry.dispose(); obj.material.dispose(); }
    renderer.dispose();
  };
}
