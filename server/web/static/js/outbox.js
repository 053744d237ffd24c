import { request, paths, session } from './api.js';

// The outbox keeps what a gardener typed on this device until the box has it: each
// entry (a draft, or one whose sending failed) in localStorage, its photo in
// IndexedDB. Sending is safe to repeat: the log is created with the entry's id as
// its Idempotency-Key and the photo with one of its own, so a retry after a lost
// answer (or the browser's own resend) finds what the first try made.
//
// An entry: {id, c, g, bed, plant, kind, fields, at, photo: {type, size} | null,
//            body, logId, fix (changes typed after a lost answer), photoDone,
//            state: 'draft' | 'failed', error, updated}

const key = () => `gardend.outbox.${session()?.username || '-'}`;
const listeners = new Set();

export function entries() {
  try {
    const v = JSON.parse(localStorage.getItem(key()));
    return Array.isArray(v) ? v : [];
  } catch {
    return [];
  }
}

function store(list) {
  try {
    localStorage.setItem(key(), JSON.stringify(list));
  } catch { /* full: the entry still lives in the open form */ }
  for (const fn of listeners) fn();
}

// gone are the entries this page sent or dropped: a late event of their form must
// not keep them again.
const gone = new Set();

export function putEntry(e) {
  if (gone.has(e.id)) return;
  e.updated = new Date().toISOString();
  store([...entries().filter((x) => x.id !== e.id), e]);
}

export function dropEntry(id) {
  gone.add(id);
  store(entries().filter((x) => x.id !== id));
  forgetPhoto(id).catch(() => {});
}

// onChange calls fn whenever the outbox changes; it returns the unsubscribe.
export function onChange(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

// newID is a random UUID (crypto.randomUUID needs a secure context; a farm box is
// often plain http on the local network).
export function newID() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((v) => v.toString(16).padStart(2, '0')).join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

// Photos wait in IndexedDB (they are too big for localStorage); without it (a
// private window of some browsers), in memory for as long as the page lives.
const memory = new Map();
let dbPromise = null;

function db() {
  if (!dbPromise) {
    dbPromise = new Promise((resolve, reject) => {
      const r = indexedDB.open('gardend-outbox', 1);
      r.onupgradeneeded = () => r.result.createObjectStore('photos');
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
    dbPromise.catch(() => { dbPromise = null; });
  }
  return dbPromise;
}

function tx(mode, fn) {
  return db().then((d) => new Promise((resolve, reject) => {
    const t = d.transaction('photos', mode);
    const req = fn(t.objectStore('photos'));
    t.oncomplete = () => resolve(req.result);
    t.onerror = () => reject(t.error);
    t.onabort = () => reject(t.error);
  }));
}

export async function keepPhoto(id, blob) {
  memory.set(id, blob);
  try { await tx('readwrite', (s) => s.put(blob, id)); } catch { /* kept in memory */ }
}

export async function photoOf(id) {
  if (memory.has(id)) return memory.get(id);
  try { return (await tx('readonly', (s) => s.get(id))) || null; } catch { return null; }
}

export async function forgetPhoto(id) {
  memory.delete(id);
  await tx('readwrite', (s) => s.delete(id));
}

// send delivers an entry: the log, then its photo. It keeps the entry's progress
// (logId, photoDone) in the outbox as it goes, so that a retry resumes where this
// try stopped; on success the entry leaves the outbox and the log is returned.
export async function send(e, { signal } = {}) {
  const { c, g } = e;
  let log = null;
  if (!e.logId) {
    log = await request('POST', paths.logs(c, g), { body: e.body, headers: { 'Idempotency-Key': e.id }, signal });
    e.logId = log.id;
    // A retry answers the log the first try made: what was typed since goes in too.
    e.fix = changes(log, e.body);
    putEntry(e);
  }
  if (e.fix) {
    log = await request('PUT', paths.log(c, g, e.logId), { body: e.fix, signal });
    e.fix = null;
    putEntry(e);
  }
  if (e.photo && !e.photoDone) {
    // The photo has a key of its own: a try before this one may have delivered it.
    const blob = await photoOf(e.id);
    if (!blob) throw new Error('The photo is no longer on this device; remove it to send the entry without it, or pick it again.');
    await request('POST', paths.photos(c, g, e.logId), { blob, headers: { 'Idempotency-Key': e.id + ':photo' }, signal });
    e.photoDone = true;
    putEntry(e);
    log = null;
  }
  if (!log) log = await request('GET', paths.log(c, g, e.logId), { signal });
  dropEntry(e.id);
  return log;
}

// changes lists the members of body that log (or the body sent before) does not
// hold as sent (null: none).
export function changes(log, body) {
  const out = {};
  for (const k of ['title', 'notes', 'quantity', 'assignee']) {
    const want = body[k] ?? (k === 'notes' ? '' : null);
    if (JSON.stringify(log[k] ?? (k === 'notes' ? '' : null)) !== JSON.stringify(want)) out[k] = body[k] ?? null;
  }
  if (body.at && Date.parse(log.at) !== Date.parse(body.at)) out.at = body.at;
  return Object.keys(out).length ? out : null;
}
