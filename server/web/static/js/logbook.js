import { get, put, del, request, paths, session } from './api.js';
import { h, setTitle, problemBox, announce, confirmDialog } from './ui.js';
import { bedsOf, plantsOf, bedName, plantName } from './gardendata.js';
import { quickEntry, outboxPanel } from './quickentry.js';
import { exportPanel } from './exports.js';

// The garden's logbook: its logs newest first, filtered by type, bed, status and
// words, a page at a time; quick entry, entries waiting on this device, exports.

export const typeLabel = { observation: 'Observation', activity: 'Activity', harvest: 'Harvest', task: 'Task' };
const filterNames = ['type', 'bed', 'status', 'q'];

export async function logbook(main, [c, g, qs], signal) {
  const base = paths.garden(c, g);
  const [gd, co, role, beds] = await Promise.all([get(base, { signal }), get(paths.company(c), { signal }), get(base + '/role', { signal }),
    bedsOf(c, g).catch(() => new Map())]);
  if (signal.aborted) return null;
  setTitle('Logbook', gd.name);
  const admin = role.role === 'admin';
  const params = new URLSearchParams(qs || '');
  const query = {};
  for (const k of filterNames) if (params.get(k)) query[k] = params.get(k);

  const tl = timeline({ c, g, query, admin, beds, signal, emptyText: 'No entries match.' });
  const qe = quickEntry({ c, g, what: gd.name, admin, onSaved: () => tl.reload() });
  const ob = outboxPanel({ c, g, onSaved: () => tl.reload() });

  const sel = (name, label, options) => {
    const id = 'lf-' + name;
    return h('div', { class: 'field' }, h('label', { for: id }, label),
      h('select', { id, name }, options.map(([v, t]) => h('option', { value: v, selected: (query[name] || '') === v }, t))));
  };
  const bedOptions = [...beds.values()].map((b) => [String(b.id), bedName(beds, b.id)]).sort((a, b) => a[1].localeCompare(b[1], undefined, { numeric: true }));
  const search = h('input', { id: 'lf-q', name: 'q', type: 'search', value: query.q || '', placeholder: 'words in title or notes', autocomplete: 'off' });
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter the logbook' },
    sel('type', 'Type', [['', 'all types'], ...Object.entries(typeLabel)]),
    sel('bed', 'Bed', [['', 'all beds'], ...bedOptions]),
    sel('status', 'Status', [['', 'any status'], ['pending', 'pending'], ['done', 'done']]),
    h('div', { class: 'field grow' }, h('label', { for: 'lf-q' }, 'Search'), search),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Search'), h('button', { type: 'reset' }, 'Clear')));
  const apply = () => {
    const q = {};
    for (const k of filterNames) {
      const v = filters.elements[k].value.trim();
      if (v) q[k] = v;
    }
    const s = new URLSearchParams(q).toString();
    history.replaceState(null, '', `#/c/${c}/g/${g}/logbook${s ? '?' + s : ''}`);
    tl.setQuery(q);
  };
  filters.addEventListener('submit', (ev) => { ev.preventDefault(); apply(); });
  filters.addEventListener('change', (ev) => { if (ev.target.tagName === 'SELECT') apply(); });
  filters.addEventListener('reset', () => setTimeout(apply));

  main.append(
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'Gardens'), ' › ', h('a', { href: `#/c/${c}` }, co.name), ' › ',
      h('a', { href: `#/c/${c}/g/${g}` }, gd.name), ' › ', 'Logbook'),
    h('div', { class: 'title-row' }, h('h1', {}, `Logbook of ${gd.name}`),
      h('a', { class: 'button', href: `#/c/${c}/g/${g}` }, 'Map and beds'), h('a', { class: 'button', href: '#/tasks' }, 'My tasks')),
    h('div', { class: 'logbook-layout' },
      h('div', { class: 'col-entry' }, qe, ob),
      h('section', { class: 'card col-logs', 'aria-labelledby': 'tl-h' }, h('h2', { id: 'tl-h' }, 'Entries'), filters, tl.el),
      h('div', { class: 'col-more' }, exportPanel(c, g))));
  tl.reload();
  return () => { tl.destroy(); qe.detach(); ob.detach(); };
}

// timeline lists the logs of a garden that query selects (the API's filters), with a
// "More" button while there are more pages.
export function timeline({ c, g, query, admin, beds, signal, emptyText }) {
  const me = session()?.username;
  const list = h('ol', { class: 'timeline' });
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'More');
  const status = h('p', { class: 'progress', role: 'status', 'aria-live': 'polite' });
  const el = h('div', { class: 'timeline-box' }, status, list, more);
  const urls = [];
  let q = { ...query };
  let next = null;
  let gen = 0;

  async function load(reset) {
    const mine = reset ? ++gen : gen;
    if (reset) next = null;
    status.textContent = 'Reading the logbook…';
    more.hidden = true;
    el.dataset.loaded = 'false';
    const params = new URLSearchParams(q);
    if (!reset && next) params.set('cursor', next);
    try {
      const qs = params.toString();
      const page = await get(paths.logs(c, g) + (qs ? '?' + qs : ''), { signal });
      if (mine !== gen || signal?.aborted) return;
      if (reset) list.replaceChildren();
      for (const l of page.logs) list.append(item(l));
      next = page.next;
      more.hidden = !next;
      const n = list.children.length;
      status.textContent = n === 0 ? emptyText : `${n} ${n === 1 ? 'entry' : 'entries'}${next ? ' so far' : ''}`;
      el.dataset.count = String(n);
      el.dataset.more = String(Boolean(next));
      el.dataset.loaded = 'true';
    } catch (err) {
      if (signal?.aborted || err.name === 'AbortError') return;
      status.replaceChildren(problemBox(err, 'The logbook'));
      if (!reset) more.hidden = false;
    }
  }
  more.addEventListener('click', () => load(false));

  function item(l) {
    const li = h('li', { class: `log log-${l.type}`, dataset: { id: String(l.id), type: l.type, status: l.status } });
    const meta = h('div', { class: 'log-meta' }, h('time', { datetime: l.at }, whenText(l)), ` · by ${l.author}`);
    if (l.bed !== null && l.bed !== undefined) {
      const name = bedName(beds, l.bed);
      meta.append(' · ', l.bed_removed
        ? h('span', { class: 'bed-name removed', title: 'This bed was removed from the garden' }, `removed ${name}`)
        : h('a', { class: 'bed-name', href: `#/c/${c}/g/${g}/b/${l.bed}/log` }, name));
      if (l.plant) {
        const a = h('a', { class: 'plant-name', href: `#/c/${c}/g/${g}/b/${l.bed}/p/${encodeURIComponent(l.plant)}` }, 'a plant');
        meta.append(', ', a);
        if (!l.bed_removed) {
          plantsOf(c, g, l.bed).then((ps) => {
            const p = ps.find((x) => x.id === l.plant);
            if (p) a.textContent = plantName(p);
          }, () => {});
        }
      }
    }
    if (l.quantity) meta.append(' · ', h('span', { class: 'quantity' }, `${fmtNum(l.quantity.value)} ${l.quantity.unit}`));
    if (l.type === 'task') {
      meta.append(' · ', h('span', { class: 'task-state' }, l.status === 'done' ? 'done' : `pending${l.assignee ? ', for ' + l.assignee : ', not assigned'}`));
    }
    const actions = h('div', { class: 'log-actions' });
    if (l.type === 'task' && l.status === 'pending' && (admin || l.assignee === me)) {
      const done = h('button', { type: 'button', class: 'small primary' }, 'Mark done');
      done.addEventListener('click', async () => {
        done.disabled = true;
        try {
          const updated = await put(paths.log(c, g, l.id), { status: 'done' });
          li.replaceWith(item(updated));
          announce(`Done: ${l.title}`);
        } catch (err) {
          actions.append(problemBox(err));
          done.disabled = false;
        }
      });
      actions.append(done);
    }
    if (admin || l.author === me) {
      const rm = h('button', { type: 'button', class: 'small danger' }, 'Delete');
      rm.addEventListener('click', async () => {
        if (!await confirmDialog(`Delete “${l.title}”${l.photos.length ? ' and its photos' : ''}? This cannot be undone.`, 'Delete entry')) return;
        try {
          await del(paths.log(c, g, l.id));
          li.remove();
          announce(`Deleted: ${l.title}`);
        } catch (err) {
          actions.append(problemBox(err));
        }
      });
      actions.append(rm);
    }
    for (const part of [
      h('div', { class: 'log-head' }, h('span', { class: `log-type t-${l.type}` }, typeLabel[l.type] || l.type), ' ', h('strong', { class: 'log-title' }, l.title)),
      meta,
      l.notes ? h('p', { class: 'log-notes' }, l.notes) : null,
      l.photos.length ? photos(l) : null,
      actions.childNodes.length ? actions : null]) if (part) li.append(part);
    return li;
  }

  // photos shows the log's thumbnails, fetched with the token; a tap shows the photo.
  function photos(l) {
    const box = h('div', { class: 'log-photos' });
    for (const id of l.photos) {
      const btn = h('button', { type: 'button', class: 'photo-thumb', 'aria-label': `Photo ${id} of “${l.title}”` }, h('span', { class: 'hint' }, 'photo…'));
      box.append(btn);
      blobURL(paths.photo(c, g, l.id, id) + '?size=thumb').then((url) => {
        btn.replaceChildren(h('img', { src: url, alt: '', class: 'thumb' }));
        btn.dataset.loaded = 'true';
      }, () => { btn.replaceChildren(h('span', { class: 'hint' }, 'photo unavailable')); });
      btn.addEventListener('click', async () => {
        try {
          const url = await blobURL(paths.photo(c, g, l.id, id));
          showPhoto(url, l.title);
        } catch (err) {
          box.append(problemBox(err, 'The photo'));
        }
      });
    }
    return box;
  }

  async function blobURL(path) {
    const res = await request('GET', path, { raw: true, signal });
    const url = URL.createObjectURL(await res.blob());
    urls.push(url);
    return url;
  }

  return {
    el,
    reload: () => load(true),
    setQuery(nq) { q = { ...nq }; return load(true); },
    destroy() { gen++; for (const u of urls) URL.revokeObjectURL(u); },
  };
}

function showPhoto(url, title) {
  const close = h('button', { type: 'button' }, 'Close');
  const d = h('dialog', { class: 'photo-dialog', 'aria-label': `Photo of ${title}` }, h('img', { src: url, alt: `Photo of ${title}` }), h('div', { class: 'actions' }, close));
  close.addEventListener('click', () => { d.close(); d.remove(); });
  d.addEventListener('close', () => d.remove());
  document.body.append(d);
  d.showModal();
  close.focus();
}

const fmtNum = (v) => (Number.isInteger(v) ? String(v) : v.toFixed(2).replace(/0+$/, ''));

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const dateOnly = new Intl.DateTimeFormat(undefined, { weekday: 'short', day: 'numeric', month: 'short', year: 'numeric' });

// whenText: when it happened; for a task when it is due, in words ("due in 3 days").
export function whenText(l) {
  const at = new Date(l.at);
  if (l.type !== 'task') return dateTime.format(at);
  return `due ${dateOnly.format(at)} (${dueWords(at, l.status)})`;
}

export function dueWords(at, status) {
  const day = (d) => Math.floor((d.getTime() - d.getTimezoneOffset() * 60000) / 864e5);
  const n = day(at) - day(new Date());
  if (status === 'done') return 'done';
  if (n === 0) return 'today';
  if (n === 1) return 'tomorrow';
  if (n === -1) return 'overdue since yesterday';
  if (n < 0) return `overdue by ${-n} days`;
  if (n < 14) return `in ${n} days`;
  if (n < 61) return `in ${Math.round(n / 7)} weeks`;
  return `in about ${Math.round(n / 30.4)} months`;
}
