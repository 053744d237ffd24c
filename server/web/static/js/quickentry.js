import { get, paths, session, ApiError } from './api.js';
import { h, problemBox, announce } from './ui.js';
import { entries, putEntry, dropEntry, newID, keepPhoto, photoOf, forgetPhoto, send, onChange, changes } from './outbox.js';

// Quick entry, made for a phone in the field: from a bed or a plant, one tap picks
// what happened (observed, watered, harvested, a task for someone) and opens a short
// form with a sensible title, a photo from the camera and, for a harvest, how much.
// What is typed is kept on the device as it is typed (outbox.js); when the box does
// not answer, the form says so, keeps everything and offers to retry.

export const kinds = [
  { id: 'observed', type: 'observation', label: 'Observed', title: 'Observed' },
  { id: 'watered', type: 'activity', label: 'Watered', title: 'Watered' },
  { id: 'harvested', type: 'harvest', label: 'Harvested', title: 'Harvested' },
  { id: 'task', type: 'task', label: 'Task for…', title: '', admin: true },
];
const units = ['kg', 'g', 'pieces', 'bunches', 'l'];
const MAX_PHOTO = 15 * 1024 * 1024; // under the box's 16 MiB, whatever it adds

// unreachable: the box did not answer, or could not right now; the entry waits.
export function unreachable(err) {
  return err instanceof ApiError && (err.status === 0 || err.status === 408 || err.status === 429 || err.status >= 500);
}

const unreachableText = 'The box did not answer. What you typed is kept on this device: retry when the box is in reach.';

// quickEntry is the panel of one target: the garden (no bed), a bed, or a plant of
// a bed. what names the target in the heading; onSaved gets each saved log.
export function quickEntry({ c, g, bed = null, plant = null, what, admin, onSaved }) {
  const me = session()?.username;
  const status = h('div', { class: 'entry-status', role: 'status', 'aria-live': 'polite' });
  const formBox = h('div', { class: 'entry-form-box' });
  const buttons = h('div', { class: 'quick-kinds', role: 'group', 'aria-label': `New entry for ${what}` },
    kinds.filter((k) => !k.admin || admin).map((k) => {
      const b = h('button', { type: 'button', class: 'quick-kind', dataset: { kind: k.id } }, k.label);
      b.addEventListener('click', () => open(switchKind(k) || newEntry(k)));
      return b;
    }));
  const root = h('section', { class: 'card quick', 'aria-labelledby': 'quick-h' },
    h('h2', { id: 'quick-h' }, `Quick entry: ${what}`), buttons, status, formBox);
  let current = null;

  const mine = (e) => e.c === String(c) && e.g === String(g) && (e.bed ?? null) === (bed === null ? null : Number(bed)) && (e.plant ?? null) === plant;
  const waiting = entries().filter(mine).sort((a, b) => (a.updated < b.updated ? 1 : -1))[0];
  if (waiting) {
    open(waiting, waiting.state === 'failed' ? 'Not sent yet: ' + (waiting.error || unreachableText) : 'Restored what you typed before; it is not sent yet.');
  }

  // switchKind turns the open, unsent draft into another kind, keeping what was typed
  // and the photo (a default title follows the kind).
  function switchKind(k) {
    const e = current?.e;
    if (!e || e.state !== 'draft' || e.logId || !current.touched) return null;
    const was = kinds.find((x) => x.id === e.kind);
    e.fields = current.read();
    if (!e.fields.title || e.fields.title === was?.title) e.fields.title = k.title;
    e.kind = k.id;
    putEntry(e);
    return e;
  }

  function newEntry(k) {
    return { id: newID(), c: String(c), g: String(g), bed: bed === null ? null : Number(bed), plant, kind: k.id, fields: { title: k.title, unit: 'kg', due: tomorrow() }, photo: null, state: 'draft' };
  }

  function open(e, note) {
    current?.close();
    current = entryForm(e, note);
    formBox.replaceChildren(current.el);
    for (const b of buttons.children) b.setAttribute('aria-pressed', String(b.dataset.kind === e.kind));
    current.focus();
  }

  function entryForm(e, note) {
    const k = kinds.find((x) => x.id === e.kind) || kinds[0];
    const id = (n) => `qe-${n}`;
    const f = e.fields;
    const title = h('input', { id: id('title'), name: 'title', required: true, maxlength: 200, value: f.title || '', autocomplete: 'off',
      placeholder: k.type === 'task' ? 'What needs doing?' : '' });
    const notes = h('textarea', { id: id('notes'), name: 'notes', rows: 3, maxlength: 20000, placeholder: 'What did you see or do? (optional)' });
    notes.value = f.notes || '';
    const qty = h('input', { id: id('qty'), name: 'quantity', type: 'number', inputmode: 'decimal', min: 0, step: 'any', value: f.quantity ?? '' });
    const unit = h('select', { id: id('unit'), name: 'unit' }, units.map((u) => h('option', { value: u, selected: u === (f.unit || 'kg') }, u)));
    const assignee = h('select', { id: id('assignee'), name: 'assignee' }, h('option', { value: '' }, 'nobody yet'));
    const due = h('input', { id: id('due'), name: 'due', type: 'date', value: f.due || tomorrow() });
    const file = h('input', { id: id('photo'), name: 'photo', type: 'file', accept: 'image/*', capture: 'environment' });
    const preview = h('div', { class: 'photo-preview' });
    const errors = {};
    const field = (name, label, input, extra) => {
      errors[name] = h('span', { class: 'field-error', id: id(name) + '-err' });
      input.setAttribute('aria-describedby', id(name) + '-err');
      return h('div', { class: 'field' }, h('label', { for: input.id }, label), input, extra, errors[name]);
    };
    const problem = h('div', { class: 'form-error', 'aria-live': 'assertive' });
    const save = h('button', { type: 'submit', class: 'primary' }, e.state === 'failed' ? 'Retry' : 'Save');
    const discard = h('button', { type: 'button' }, 'Discard');
    const form = h('form', { class: 'stack entry-form', novalidate: true, dataset: { kind: k.id, entry: e.id } },
      h('h3', {}, k.type === 'task' ? 'Task' : k.label),
      note ? h('p', { class: e.state === 'failed' ? 'problem' : 'notice', role: 'alert' }, note) : null,
      field('title', k.type === 'task' ? 'What to do' : 'Title', title),
      k.type === 'harvest' ? h('div', { class: 'row2' }, field('quantity', 'How much', qty), field('unit', 'Unit', unit)) : null,
      k.type === 'task' ? h('div', { class: 'row2' }, field('assignee', 'For', assignee), field('due', 'Due', due)) : null,
      field('notes', 'Notes', notes),
      field('photo', 'Photo', file, preview),
      problem,
      h('div', { class: 'actions' }, save, discard));
    let previewURL = null;
    let touched = entries().some((x) => x.id === e.id); // kept before: typed into
    const sent = () => Boolean(e.logId);

    if (k.type === 'task') fillPeople(assignee, f.assignee || '');
    showPhoto();

    const read = () => ({ title: title.value, notes: notes.value, quantity: qty.value, unit: unit.value, assignee: assignee.value, due: due.value });
    // Once sent or discarded, the entry is gone: nothing may keep it again.
    let finished = false;
    form.addEventListener('input', (ev) => {
      if (ev.target === file || finished) return;
      touched = true;
      e.fields = read();
      putEntry(e);
    });
    file.addEventListener('change', async () => {
      const chosen = file.files[0];
      if (!chosen) return;
      errors.photo.textContent = 'Preparing the photo…';
      try {
        const blob = await usablePhoto(chosen);
        if (finished) return;
        await keepPhoto(e.id, blob);
        if (finished) { forgetPhoto(e.id).catch(() => {}); return; }
        e.photo = { type: blob.type, size: blob.size };
        e.photoDone = false;
        touched = true;
        e.fields = read();
        putEntry(e);
        errors.photo.textContent = '';
        showPhoto();
      } catch (err) {
        errors.photo.textContent = err.message;
      }
      file.value = '';
    });
    discard.addEventListener('click', () => {
      finished = true;
      dropEntry(e.id);
      close();
      formBox.replaceChildren();
      current = null;
      for (const b of buttons.children) b.setAttribute('aria-pressed', 'false');
      status.textContent = e.logId ? 'The entry was saved already; only the photo was dropped.' : 'Discarded.';
    });
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      problem.replaceChildren();
      for (const el of Object.values(errors)) if (el !== errors.photo) el.textContent = '';
      const v = read();
      const bad = check(k, v);
      if (bad) {
        for (const [name, msg] of Object.entries(bad)) errors[name].textContent = msg;
        problem.append(problemBox(new Error('Please fix the fields marked below.')));
        return;
      }
      e.fields = v;
      e.at = e.at || new Date().toISOString();
      const next = body(k, v, e);
      // Once the log exists (its photo still to send), what is typed since changes it.
      if (sent()) {
        const d = e.body && changes(e.body, next);
        if (d) e.fix = { ...e.fix, ...d };
      }
      e.body = next;
      putEntry(e);
      save.disabled = discard.disabled = true;
      save.textContent = 'Saving…';
      try {
        const log = await send(e);
        finished = true;
        close();
        formBox.replaceChildren();
        current = null;
        for (const b of buttons.children) b.setAttribute('aria-pressed', 'false');
        status.replaceChildren(h('p', { class: 'ok', dataset: { saved: String(log.id) } }, `Saved: ${log.title}${log.photos.length ? ' (with photo)' : ''}.`));
        announce(`Saved: ${log.title}`);
        onSaved?.(log);
      } catch (err) {
        save.disabled = discard.disabled = false;
        if (err.name === 'AbortError') return;
        if (unreachable(err)) {
          e.state = 'failed';
          e.error = unreachableText;
          putEntry(e);
          save.textContent = 'Retry';
          problem.replaceChildren(h('p', { class: 'problem unreachable', role: 'alert' }, unreachableText, err.status ? h('span', { class: 'sub' }, ` (${err.message})`) : null));
          return;
        }
        e.state = 'draft';
        putEntry(e);
        save.textContent = e.logId ? 'Retry' : 'Save';
        const what = e.logId ? 'The entry is saved, but not all of it' : 'Not saved';
        problem.replaceChildren(problemBox(err, what));
        for (const [name, msg] of Object.entries(err.fields || {})) {
          const key = name.startsWith('quantity') ? (name === 'quantity.unit' ? 'unit' : 'quantity') : name === 'at' && k.type === 'task' ? 'due' : name;
          if (errors[key]) errors[key].textContent = msg;
        }
      }
    });

    async function showPhoto() {
      if (previewURL) URL.revokeObjectURL(previewURL);
      previewURL = null;
      if (!e.photo) { preview.replaceChildren(); return; }
      const blob = await photoOf(e.id);
      if (!blob) { preview.replaceChildren(h('p', { class: 'hint' }, 'The photo chosen before is no longer on this device.')); return; }
      previewURL = URL.createObjectURL(blob);
      const remove = h('button', { type: 'button', class: 'small' }, 'Remove photo');
      remove.addEventListener('click', async () => {
        await forgetPhoto(e.id).catch(() => {});
        e.photo = null;
        putEntry(e);
        showPhoto();
      });
      preview.replaceChildren(h('img', { src: previewURL, alt: 'The chosen photo', class: 'thumb' }), h('span', { class: 'hint' }, ` ${Math.round(blob.size / 1024)} KB `), remove);
    }

    function close() {
      if (previewURL) URL.revokeObjectURL(previewURL);
    }

    return {
      el: form, e, close, read,
      get touched() { return touched || e.state === 'failed' || Boolean(e.photo); },
      focus: () => (k.type === 'task' || !title.value ? title : save).focus({ preventScroll: false }),
    };
  }

  async function fillPeople(sel, chosen) {
    const names = new Set(me ? [me] : []);
    const answers = await Promise.allSettled([get(paths.garden(c, g) + '/permissions'), get(paths.company(c) + '/permissions')]);
    for (const a of answers) if (a.status === 'fulfilled' && Array.isArray(a.value)) for (const p of a.value) names.add(p.username);
    for (const n of [...names].sort()) sel.append(h('option', { value: n, selected: n === chosen }, n === me ? `${n} (me)` : n));
    sel.dataset.loaded = 'true';
  }

  // Entries of this target that other tabs or the list below change.
  const off = onChange(() => {
    if (current && current.touched && !entries().some((x) => x.id === current.e.id) && !current.el.querySelector('button[type=submit]').disabled) {
      current.close();
      formBox.replaceChildren();
      current = null;
    }
  });
  root.detach = () => { off(); current?.close(); };
  return root;
}

// check finds what the box would refuse before asking it.
function check(k, v) {
  const bad = {};
  if (!v.title.trim()) bad.title = k.type === 'task' ? 'Say what needs doing.' : 'A title is needed.';
  if (k.type === 'harvest') {
    const n = Number(v.quantity);
    if (v.quantity === '' || !Number.isFinite(n) || n < 0) bad.quantity = 'How much was harvested, as a number.';
  }
  if (k.type === 'task' && !v.due) bad.due = 'When is it due?';
  return Object.keys(bad).length ? bad : null;
}

// body is the log to create.
function body(k, v, e) {
  const out = { type: k.type, title: v.title.trim(), at: e.at };
  if (v.notes.trim()) out.notes = v.notes;
  if (e.bed !== null) out.bed = e.bed;
  if (e.plant) out.plant = e.plant;
  if (k.type === 'harvest') out.quantity = { value: Number(v.quantity), unit: v.unit };
  if (k.type === 'task') {
    out.at = new Date(`${v.due}T09:00`).toISOString();
    if (v.assignee) out.assignee = v.assignee;
  }
  return out;
}

function tomorrow() {
  const d = new Date(Date.now() + 864e5);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

// usablePhoto is the photo as the box takes it: a JPEG or PNG under its limit as it
// is; anything else (HEIC, WebP, a huge picture) drawn upright into a JPEG of at most
// 4096 px a side.
async function usablePhoto(f) {
  if ((f.type === 'image/jpeg' || f.type === 'image/png') && f.size <= MAX_PHOTO) return f;
  let bmp;
  try {
    bmp = await createImageBitmap(f, { imageOrientation: 'from-image' });
  } catch {
    throw new Error('This file is not a picture this browser can read; take or pick a JPEG or PNG photo.');
  }
  const scale = Math.min(1, 4096 / Math.max(bmp.width, bmp.height));
  const canvas = document.createElement('canvas');
  canvas.width = Math.round(bmp.width * scale);
  canvas.height = Math.round(bmp.height * scale);
  canvas.getContext('2d').drawImage(bmp, 0, 0, canvas.width, canvas.height);
  bmp.close();
  const blob = await new Promise((resolve) => canvas.toBlob(resolve, 'image/jpeg', 0.88));
  if (!blob) throw new Error('The photo could not be prepared; try another.');
  return blob;
}

// outboxPanel lists the garden's entries that wait to be sent, with a retry for each.
export function outboxPanel({ c, g, onSaved }) {
  const list = h('ul', { class: 'outbox-list' });
  const box = h('section', { class: 'card outbox', 'aria-labelledby': 'outbox-h', hidden: true },
    h('h2', { id: 'outbox-h' }, 'Not sent yet'),
    h('p', { class: 'hint' }, 'These entries are kept on this device until the box has them.'), list);
  const render = () => {
    const waiting = entries().filter((e) => e.c === String(c) && e.g === String(g) && e.state === 'failed');
    box.hidden = waiting.length === 0;
    list.replaceChildren(...waiting.map((e) => {
      const msg = h('span', { class: 'error-text' });
      const retry = h('button', { type: 'button', class: 'small primary' }, 'Retry');
      const drop = h('button', { type: 'button', class: 'small' }, 'Discard');
      retry.addEventListener('click', async () => {
        retry.disabled = true;
        msg.textContent = 'Sending…';
        try {
          const log = await send(e);
          announce(`Saved: ${log.title}`);
          onSaved?.(log);
        } catch (err) {
          msg.textContent = unreachable(err) ? unreachableText : err.message;
          retry.disabled = false;
        }
      });
      drop.addEventListener('click', () => dropEntry(e.id));
      return h('li', { dataset: { entry: e.id } }, h('strong', {}, e.fields?.title || '(no title)'), ' ', msg, ' ', retry, ' ', drop);
    }));
  };
  const off = onChange(render);
  render();
  box.detach = off;
  return box;
}
