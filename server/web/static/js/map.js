import { h, svg } from './ui.js';
import { projection, imageAffine } from './geo.js';
import { TileLayer } from './tiles.js';

// GardenMap draws the garden's picture placed by its georeferenced corners (an affine
// placement: rotated and skewed pictures fit) with a marker per bed and per plant, in
// one SVG. The picture is the base layer: its preview stretched over the whole
// picture, and over it the tiles of the picture's own pyramid that the view needs
// (tiles.js); no other host. It pans (drag, arrow keys), zooms (wheel, pinch, + and
// -) and fits (0).
export class GardenMap {
  constructor({ label, describe, onSelectPlant, onSelectBed }) {
    this.describe = describe;
    this.onSelectPlant = onSelectPlant;
    this.onSelectBed = onSelectBed;
    this.proj = null;
    this.view = { s: 1, tx: 0, ty: 0 };
    this.moved = false;
    this.image = null;
    this.beds = [];
    this.plants = [];
    this.handles = null;
    this.pinned = null;
    this.highlight = null;

    this.svg = svg('svg', { class: 'map-svg', tabindex: 0, role: 'application',
      'aria-label': `${label}. Arrow keys pan, plus and minus zoom, 0 fits the garden.` });
    this.gImage = svg('g', { class: 'layer-image' });
    this.gBeds = svg('g', { class: 'layer-beds' });
    this.gPlants = svg('g', { class: 'layer-plants' });
    this.gHandles = svg('g', { class: 'layer-handles' });
    this.svg.append(this.gImage, this.gPlants, this.gBeds, this.gHandles);
    this.tip = h('div', { class: 'tip', role: 'tooltip', hidden: true });
    const btn = (text, label, fn) => h('button', { type: 'button', 'aria-label': label, title: label, onclick: fn }, text);
    this.controls = h('div', { class: 'map-controls' },
      btn('+', 'Zoom in', () => this.zoomBy(1.5)),
      btn('−', 'Zoom out', () => this.zoomBy(1 / 1.5)),
      btn('⤢', 'Fit the garden', () => { this.moved = false; this.fit(); }));
    this.el = h('div', { class: 'map' }, this.svg, this.controls, this.tip);
    this.el.gardenMap = this; // for the browser tests' measurements
    this.bindInput();
    this.resize = new ResizeObserver(() => { if (!this.moved) this.fit(); else this.render(); });
    this.resize.observe(this.el);
  }

  destroy() {
    this.resize.disconnect();
    this.tileLayer?.destroy();
    if (this.image && this.image.ownUrl) URL.revokeObjectURL(this.image.url);
  }

  // ensureOrigin fixes the projection's origin at the first position the map learns.
  ensureOrigin(lat, lon) {
    if (!this.proj) this.proj = projection(lat, lon);
  }

  metres(p) { return this.proj.toMetres(p.lat, p.lon); }

  // setImage places a picture: corners {top_left, top_right, bottom_left: {lat, lon}}.
  setImage(img) {
    if (this.image && this.image.ownUrl && this.image.url !== img?.url) URL.revokeObjectURL(this.image.url);
    this.image = img;
    if (img) {
      const tl = img.corners.top_left, br = img.corners.top_right, bl = img.corners.bottom_left;
      this.ensureOrigin((tl.lat + br.lat + bl.lat) / 3, (tl.lon + br.lon + bl.lon) / 3);
    }
    this.tileLayer?.destroy();
    this.tileLayer = null;
    this.gPicture = null;
    this.gImage.replaceChildren();
    if (img) {
      // The picture in its own pixels: the preview stretched over all of it, tiles on top.
      this.gPicture = svg('g', { class: 'picture' });
      this.imageEl = svg('image', { href: img.url, width: img.width, height: img.height, preserveAspectRatio: 'none', class: img.preview ? 'preview' : undefined });
      this.imageEl.setAttribute('aria-hidden', 'true');
      const gTiles = svg('g', { class: 'layer-tiles' });
      this.gPicture.append(this.imageEl, gTiles);
      this.gImage.append(this.gPicture);
      if (img.tiles) this.tileLayer = new TileLayer(gTiles, img, () => this.tileStats());
    }
    this.tileStats();
    if (!this.moved) this.fit(); else this.render();
  }

  // tileStats shows the tile layer's state on the element, for the browser tests.
  tileStats() {
    const st = this.tileLayer?.stats() || { level: null, wanted: 0, loaded: 0 };
    this.el.dataset.tileLevel = st.level === null ? '' : String(st.level);
    this.el.dataset.tilesWanted = String(st.wanted);
    this.el.dataset.tilesLoaded = String(st.loaded);
    this.el.dataset.tiled = this.tileLayer ? 'yes' : 'no';
  }

  // setBeds: [{id, lat, lon, label, title, cls}]; setPlants: [{key, bed, lat, lon, cls, plant}].
  setBeds(beds) {
    this.beds = beds;
    for (const b of beds) this.ensureOrigin(b.lat, b.lon);
    this.gBeds.replaceChildren(...beds.map((b) => {
      const g = svg('g', { class: 'bed ' + (b.cls || ''), 'data-bed': b.id, role: 'button', 'aria-label': b.title || `Bed ${b.label}` });
      g.append(svg('rect', { x: -11, y: -11, width: 22, height: 22, rx: 4 }), svg('text', { x: 0, y: 4.5, 'text-anchor': 'middle' }));
      g.lastChild.textContent = b.label;
      g.addEventListener('click', (ev) => { ev.stopPropagation(); this.onSelectBed?.(b.id); });
      b.el = g;
      return g;
    }));
    if (!this.moved) this.fit(); else this.render();
  }

  setPlants(plants) {
    this.plants = plants;
    for (const p of plants) this.ensureOrigin(p.lat, p.lon);
    this.gPlants.replaceChildren(...plants.map((p) => {
      const c = svg('circle', { r: 6, class: 'plant ' + p.cls, 'data-key': p.key, 'data-bed': p.bed });
      c.addEventListener('pointerenter', () => { if (!this.pinned) this.showTip(p); });
      c.addEventListener('pointerleave', () => { if (!this.pinned) this.hideTip(); });
      c.addEventListener('click', (ev) => { ev.stopPropagation(); this.pin(p.key); this.onSelectPlant?.(p); });
      p.el = c;
      return c;
    }));
    if (this.pinned && !plants.some((p) => p.key === this.pinned)) this.pinned = null;
    this.applyHighlight();
    if (!this.moved) this.fit(); else this.render();
  }

  highlightBed(id) { this.highlight = id; this.applyHighlight(); }

  applyHighlight() {
    const id = this.highlight;
    for (const p of this.plants) {
      p.el.classList.toggle('hl', id !== null && String(p.bed) === String(id));
      p.el.classList.toggle('dim', id !== null && String(p.bed) !== String(id));
      p.el.classList.toggle('pinned', p.key === this.pinned);
    }
    for (const b of this.beds) b.el.classList.toggle('hl', id !== null && String(b.id) === String(id));
  }

  // pin shows a plant's values until another is picked or the map is clicked.
  pin(key) {
    this.pinned = key;
    const p = this.plants.find((x) => x.key === key);
    if (p) this.showTip(p); else this.hideTip();
    this.applyHighlight();
  }

  showTip(p) {
    this.tip.replaceChildren(this.describe(p));
    this.tip.hidden = false;
    this.tipFor = p;
    this.placeTip();
  }

  hideTip() { this.tip.hidden = true; this.tipFor = null; }

  placeTip() {
    const p = this.tipFor;
    if (!p || !this.proj) return;
    const { x, y } = this.local(p);
    const w = this.el.clientWidth, tw = this.tip.offsetWidth, th = this.tip.offsetHeight;
    const left = Math.min(Math.max(4, x + 12), Math.max(4, w - tw - 4));
    const top = y - th - 12 >= 4 ? y - th - 12 : y + 12;
    this.tip.style.left = `${left}px`;
    this.tip.style.top = `${top}px`;
  }

  // local is a position in the map element's pixels.
  local(p) {
    const m = this.metres(p);
    return { x: this.view.tx + this.view.s * m.e, y: this.view.ty - this.view.s * m.n };
  }

  // toScreen is a position in the page's viewport (CSS pixels), as tests measure.
  toScreen(lat, lon) {
    const r = this.svg.getBoundingClientRect();
    const p = this.local({ lat, lon });
    return { x: r.left + p.x, y: r.top + p.y };
  }

  // extent is the bounding box, in metres, of everything drawn.
  extent() {
    const pts = [];
    if (this.image) {
      const c = this.image.corners;
      const tl = this.metres(c.top_left), tr = this.metres(c.top_right), bl = this.metres(c.bottom_left);
      pts.push(tl, tr, bl, { e: tr.e + bl.e - tl.e, n: tr.n + bl.n - tl.n });
    }
    for (const x of [...this.beds, ...this.plants]) pts.push(this.metres(x));
    if (!pts.length) return null;
    const es = pts.map((p) => p.e), ns = pts.map((p) => p.n);
    return { minE: Math.min(...es), maxE: Math.max(...es), minN: Math.min(...ns), maxN: Math.max(...ns) };
  }

  fit() {
    const w = this.el.clientWidth, hgt = this.el.clientHeight;
    const ex = this.proj && this.extent();
    if (!ex || !w || !hgt) { this.render(); return; }
    const dx = Math.max(ex.maxE - ex.minE, 1), dy = Math.max(ex.maxN - ex.minN, 1);
    const s = Math.min((w - 40) / dx, (hgt - 40) / dy);
    this.view = { s, tx: w / 2 - s * (ex.minE + ex.maxE) / 2, ty: hgt / 2 + s * (ex.minN + ex.maxN) / 2 };
    this.render();
  }

  zoomBy(f, cx = this.el.clientWidth / 2, cy = this.el.clientHeight / 2) {
    const s = Math.min(Math.max(this.view.s * f, 0.01), 5000);
    const k = s / this.view.s;
    this.view = { s, tx: cx - (cx - this.view.tx) * k, ty: cy - (cy - this.view.ty) * k };
    this.moved = true;
    this.render();
  }

  panBy(dx, dy) {
    this.view.tx += dx;
    this.view.ty += dy;
    this.moved = true;
    this.render();
  }

  render() {
    const { s, tx, ty } = this.view;
    if (!this.proj) return;
    if (this.image && this.gPicture) {
      const c = this.image.corners;
      const [a, b, cc, d, e0, n0] = imageAffine({ top_left: this.metres(c.top_left), top_right: this.metres(c.top_right), bottom_left: this.metres(c.bottom_left) }, this.image.width, this.image.height);
      const m = [s * a, -s * b, s * cc, -s * d, tx + s * e0, ty - s * n0];
      this.gPicture.setAttribute('transform', `matrix(${m.join(' ')})`);
      this.tileLayer?.update(m, this.el.clientWidth, this.el.clientHeight);
    }
    // Plants about 0.14 m across on the ground, but always big enough to hit.
    const r = Math.min(Math.max(s * 0.07, 3.5), 8).toFixed(1);
    for (const p of this.plants) {
      const q = this.local(p);
      p.el.setAttribute('r', r);
      p.el.setAttribute('cx', q.x.toFixed(2));
      p.el.setAttribute('cy', q.y.toFixed(2));
    }
    for (const b of this.beds) {
      const q = this.local(b);
      b.el.setAttribute('transform', `translate(${q.x.toFixed(2)} ${q.y.toFixed(2)})`);
    }
    if (this.handles) {
      for (const hd of this.handles) {
        const q = this.local(hd.pos);
        hd.el.setAttribute('transform', `translate(${q.x.toFixed(2)} ${q.y.toFixed(2)})`);
      }
    }
    this.placeTip();
  }

  // editCorners shows a draggable handle per corner (also moved with arrow keys when
  // focused); onChange gets the new corners after each move.
  editCorners(onChange) {
    this.gHandles.replaceChildren();
    this.handles = null;
    if (!onChange || !this.image) return;
    const names = { top_left: 'Top left', top_right: 'Top right', bottom_left: 'Bottom left' };
    this.handles = Object.entries(names).map(([name, label]) => {
      const el = svg('g', { class: 'handle', tabindex: 0, role: 'slider', 'aria-label': `${label} corner: drag, or use the arrow keys`, 'data-corner': name });
      el.append(svg('circle', { r: 9 }), svg('text', { x: 0, y: 4, 'text-anchor': 'middle' }));
      el.lastChild.textContent = label.split(' ').map((w) => w[0]).join('');
      const hd = { name, el, pos: this.image.corners[name] };
      const moveTo = (x, y) => {
        const m = { e: (x - this.view.tx) / this.view.s, n: (this.view.ty - y) / this.view.s };
        hd.pos = this.proj.toLatLon(m.e, m.n);
        this.image.corners = { ...this.image.corners, [name]: hd.pos };
        this.render();
        onChange(this.image.corners);
      };
      el.addEventListener('pointerdown', (ev) => {
        ev.stopPropagation();
        el.setPointerCapture(ev.pointerId);
        const r = this.svg.getBoundingClientRect();
        const move = (e) => moveTo(e.clientX - r.left, e.clientY - r.top);
        const up = () => { el.removeEventListener('pointermove', move); el.removeEventListener('pointerup', up); };
        el.addEventListener('pointermove', move);
        el.addEventListener('pointerup', up);
      });
      el.addEventListener('keydown', (ev) => {
        const step = ev.shiftKey ? 10 : 1;
        const d = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] }[ev.key];
        if (!d) return;
        ev.preventDefault();
        ev.stopPropagation();
        const q = this.local(hd.pos);
        moveTo(q.x + d[0], q.y + d[1]);
      });
      this.gHandles.append(el);
      return hd;
    });
    this.render();
  }

  bindInput() {
    const pointers = new Map();
    let last = null;
    let dragged = false;
    this.svg.addEventListener('pointerdown', (ev) => {
      if (ev.target.closest('.handle')) return;
      pointers.set(ev.pointerId, { x: ev.clientX, y: ev.clientY, x0: ev.clientX, y0: ev.clientY });
      last = null;
      dragged = false;
    });
    this.svg.addEventListener('pointermove', (ev) => {
      if (!pointers.has(ev.pointerId)) return;
      const prev = pointers.get(ev.pointerId);
      // Captured only once it moves, so a tap on a marker stays a click on it.
      if (!dragged && Math.hypot(ev.clientX - prev.x0, ev.clientY - prev.y0) < 4) return;
      if (!dragged) { dragged = true; this.svg.setPointerCapture(ev.pointerId); }
      pointers.set(ev.pointerId, { ...prev, x: ev.clientX, y: ev.clientY });
      if (pointers.size === 1) {
        this.panBy(ev.clientX - prev.x, ev.clientY - prev.y);
      } else if (pointers.size === 2) {
        const [a, b] = [...pointers.values()];
        const dist = Math.hypot(a.x - b.x, a.y - b.y);
        const r = this.svg.getBoundingClientRect();
        if (last) this.zoomBy(dist / last, (a.x + b.x) / 2 - r.left, (a.y + b.y) / 2 - r.top);
        last = dist;
      }
    });
    const end = (ev) => { pointers.delete(ev.pointerId); last = null; };
    this.svg.addEventListener('pointerup', end);
    this.svg.addEventListener('pointercancel', end);
    this.svg.addEventListener('click', (ev) => {
      if (dragged) return;
      if (ev.target === this.svg || ev.target.closest('.layer-image')) { this.pinned = null; this.hideTip(); this.applyHighlight(); }
    });
    this.svg.addEventListener('wheel', (ev) => {
      ev.preventDefault();
      const r = this.svg.getBoundingClientRect();
      this.zoomBy(Math.exp(-ev.deltaY * 0.0015), ev.clientX - r.left, ev.clientY - r.top);
    }, { passive: false });
    this.svg.addEventListener('keydown', (ev) => {
      const step = 60;
      const keys = {
        ArrowLeft: () => this.panBy(step, 0), ArrowRight: () => this.panBy(-step, 0),
        ArrowUp: () => this.panBy(0, step), ArrowDown: () => this.panBy(0, -step),
        '+': () => this.zoomBy(1.5), '=': () => this.zoomBy(1.5), '-': () => this.zoomBy(1 / 1.5),
        0: () => { this.moved = false; this.fit(); },
        Escape: () => { this.pinned = null; this.hideTip(); this.applyHighlight(); },
      };
      if (keys[ev.key]) { ev.preventDefault(); keys[ev.key](); }
    });
  }
}
