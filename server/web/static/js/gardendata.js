import { get, lines, paths } from './api.js';
import { bedLabel } from './health.js';

// The beds and plants the logbook pages name and show, read from the box and kept
// briefly, so that a page and the next share them. The box caches the spatial
// server's answers for 30 s too; a kept answer is at most that old again.
const KEEP_MS = 30000;
const cache = new Map();

function kept(key, load) {
  const hit = cache.get(key);
  if (hit && Date.now() - hit.at < KEEP_MS) return hit.promise;
  const promise = load();
  cache.set(key, { at: Date.now(), promise });
  promise.catch(() => cache.delete(key));
  return promise;
}

// bedsOf reads the garden's beds stream whole: a Map of bed id → its line (with
// name; error lines too).
export function bedsOf(c, g) {
  return kept(`beds ${c}/${g}`, async () => {
    const out = new Map();
    await lines(paths.beds(c, g), (line) => { if (line && line.id !== undefined) out.set(String(line.id), line); });
    return out;
  });
}

// plantsOf reads a bed's plants, each with its place in the bed (index, from 1).
export function plantsOf(c, g, b) {
  return kept(`plants ${c}/${g}/${b}`, async () => {
    const res = await get(paths.plants(c, g, b));
    return res.plants.map((p, i) => ({ ...p, index: i + 1 }));
  });
}

// bedName names a bed of the garden from its line. A bed the stream does not list
// (removed since, or the stream unreadable) has no name to show: it is named by its
// id in words that cannot pass for another bed's name ("bed with id 6").
export function bedName(beds, id) {
  const line = beds?.get(String(id));
  return line ? bedLabel(line.name, id) : `bed with id ${id}`;
}

// plantName is how a plant of a bed is shown: its place, species and variety.
export function plantName(p) {
  return `#${p.index} ${p.plant || 'plant'}${p.variety ? ' (' + p.variety + ')' : ''}`;
}

export function forgetGarden(c, g) {
  for (const k of [...cache.keys()]) if (k === `beds ${c}/${g}` || k.startsWith(`plants ${c}/${g}/`)) cache.delete(k);
}
