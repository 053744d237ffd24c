import { svg } from './ui.js';

// TileLayer draws the tiles of a picture's pyramid that the map's view needs: the
// level whose pixels are at least as fine as the screen's, and only the tiles in
// view, placed in the picture's own pixels (the map's group transform places the
// picture by its corners, rotated or skewed). At or below the preview's level the
// preview under it is sharp enough and no tile loads. The tiles of the level before
// stay until those of the new one are all in, so zooming sharpens without flashing.

const maxInFlight = 6; // a browser's connections to one host
const maxKept = 300; // tile images kept (each a blob URL) beyond those in view

export class TileLayer {
  // pic: {width, height, tiles: {levels, tileSize, previewLevel, load(z, x, y, signal)}}
  constructor(group, pic, onChange) {
    this.group = group;
    this.pic = pic;
    this.src = pic.tiles;
    this.onChange = onChange || (() => {});
    this.abort = new AbortController();
    this.levels = [];
    for (let z = 0; z < this.src.levels; z++) {
      const g = svg('g', { 'data-level': z });
      this.levels.push(g);
      group.append(g); // finer levels above coarser ones
    }
    this.tiles = new Map(); // "z/x/y" → {z, el, url, state: queued|loading|loaded|failed, used}
    this.queue = [];
    this.inFlight = 0;
    this.level = null; // the level in view, null when the preview suffices
    this.wanted = new Set();
    this.clock = 0;
  }

  destroy() {
    this.abort.abort();
    for (const t of this.tiles.values()) if (t.url) URL.revokeObjectURL(t.url);
    this.tiles.clear();
    this.group.replaceChildren();
  }

  // update takes the picture's transform onto the map element (SVG matrix a…f:
  // screen = [a c; b d]·(u, v) + (e, f) for picture pixel u, v) and the element's size.
  update([a, b, c, d, e, f], viewW, viewH) {
    const det = a * d - b * c;
    if (!det || !viewW || !viewH) return;
    const last = this.src.levels - 1;
    const scale = Math.sqrt(Math.abs(det)) * (window.devicePixelRatio || 1); // device px per picture px
    // Level z has 2^(z - last) of its pixels per picture pixel; up to 1.2× enlarged is fine.
    const z = Math.min(last, Math.max(0, Math.ceil(last + Math.log2(scale) - 0.25)));
    this.wanted = new Set();
    this.clock++;
    if (z <= this.src.previewLevel) {
      this.level = null;
      this.dropOthers();
      this.onChange();
      return;
    }
    this.level = z;
    // The view's corners in picture pixels.
    let minU = Infinity, minV = Infinity, maxU = -Infinity, maxV = -Infinity;
    for (const [x, y] of [[0, 0], [viewW, 0], [0, viewH], [viewW, viewH]]) {
      const u = (d * (x - e) - c * (y - f)) / det, v = (-b * (x - e) + a * (y - f)) / det;
      minU = Math.min(minU, u); maxU = Math.max(maxU, u); minV = Math.min(minV, v); maxV = Math.max(maxV, v);
    }
    const s = 2 ** (last - z); // picture pixels per level pixel
    const side = this.src.tileSize * s;
    const cols = Math.ceil(Math.ceil(this.pic.width / s) / this.src.tileSize);
    const rows = Math.ceil(Math.ceil(this.pic.height / s) / this.src.tileSize);
    const x0 = Math.max(0, Math.floor(minU / side)), x1 = Math.min(cols - 1, Math.floor(maxU / side));
    const y0 = Math.max(0, Math.floor(minV / side)), y1 = Math.min(rows - 1, Math.floor(maxV / side));
    for (let y = y0; y <= y1; y++) {
      for (let x = x0; x <= x1; x++) {
        const key = `${z}/${x}/${y}`;
        this.wanted.add(key);
        let t = this.tiles.get(key);
        if (!t) {
          const u = x * side, v = y * side;
          const el = svg('image', { x: u, y: v, width: Math.min(side, this.pic.width - u), height: Math.min(side, this.pic.height - v), preserveAspectRatio: 'none' });
          el.setAttribute('aria-hidden', 'true');
          t = { z, x, y, key, el, url: null, state: 'queued' };
          this.tiles.set(key, t);
          this.queue.push(t);
        }
        t.used = this.clock;
      }
    }
    this.pump();
    this.settle();
  }

  // pump starts loads, those in view first.
  pump() {
    // Queued tiles gone from view are forgotten, to be asked for anew if they return.
    this.queue = this.queue.filter((t) => {
      if (this.wanted.has(t.key)) return true;
      this.tiles.delete(t.key);
      return false;
    });
    while (this.inFlight < maxInFlight && this.queue.length) {
      const t = this.queue.shift();
      t.state = 'loading';
      this.inFlight++;
      this.src.load(t.z, t.x, t.y, this.abort.signal).then((url) => {
        if (this.abort.signal.aborted || !this.tiles.has(t.key)) { URL.revokeObjectURL(url); return; }
        t.url = url;
        t.el.addEventListener('load', () => { t.state = 'loaded'; this.settle(); }, { once: true });
        t.el.addEventListener('error', () => { t.state = 'failed'; this.settle(); }, { once: true });
        t.el.setAttribute('href', url);
        this.levels[t.z].append(t.el);
      }, () => {
        // A tile that failed leaves the preview showing there; a later view asks again.
        this.tiles.delete(t.key);
      }).finally(() => { this.inFlight--; this.pump(); });
    }
  }

  // settle drops other levels' tiles once every tile in view is in, and old tiles
  // beyond the cap.
  settle() {
    if (this.complete()) this.dropOthers();
    if (this.tiles.size > maxKept) {
      const old = [...this.tiles.values()].filter((t) => !this.wanted.has(t.key) && t.state !== 'loading').sort((p, q) => p.used - q.used);
      for (const t of old.slice(0, this.tiles.size - maxKept)) this.drop(t);
    }
    this.onChange();
  }

  // complete: every tile in view has loaded (or failed).
  complete() {
    for (const key of this.wanted) {
      const t = this.tiles.get(key);
      if (!t || (t.state !== 'loaded' && t.state !== 'failed')) return false;
    }
    return true;
  }

  dropOthers() {
    for (const t of [...this.tiles.values()]) if (t.z !== this.level && t.state !== 'loading') this.drop(t);
  }

  drop(t) {
    t.el.remove();
    if (t.url) URL.revokeObjectURL(t.url);
    this.tiles.delete(t.key);
  }

  // stats for the browser tests: the level in view, its tiles wanted and loaded.
  stats() {
    let loaded = 0;
    for (const key of this.wanted) if (this.tiles.get(key)?.state === 'loaded') loaded++;
    return { level: this.level, wanted: this.wanted.size, loaded };
  }
}
