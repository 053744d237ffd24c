import { get, post } from './api.js';
import { h, form, problemBox, announce } from './ui.js';

// "Needs attention": the open alerts of a garden (or of every garden, on the home
// page), most severe first as the server orders them, each with what to do about it
// and, for admins of its garden, a button that makes it a task in the logbook.
// Plants and beds with an open alert stand out on the garden's map (mark).

const kindText = {
  water: 'Water',
  nutrients: 'Nutrients',
  diseases: 'Diseases',
  soil_humidity: 'Soil humidity',
};

// shown is how many alerts show before "Show all".
const shown = 5;

export function levelText(a) {
  if (a.kind === 'soil_humidity') return `soil humidity ${Math.round(a.level * 100)} %`;
  return `${kindText[a.kind] ? kindText[a.kind].toLowerCase() : a.kind} level ${a.level}`;
}

const day = (iso) => new Date(iso).toLocaleDateString(undefined, { day: 'numeric', month: 'short' });
const today = () => new Date().toISOString().slice(0, 10);

// attention builds the panel. path: the alerts to list ('/alerts' or a garden's
// …/alerts); canTask(alert) → boolean or a promise of one; plantLabel(alert) names a
// plant better than its id where the page knows it; gardenLabel(alert) names the
// garden (home page); mapEl is the garden map to mark.
export function attention({ path, signal, canTask, plantLabel, gardenLabel, mapEl, heading = 'Needs attention' }) {
  const list = h('ol', { class: 'alerts' });
  const status = h('p', { class: 'hint' }, 'Looking for what needs attention…');
  const more = h('button', { type: 'button', class: 'link more', hidden: true });
  const count = h('span', { class: 'count' });
  const el = h('section', { class: 'panel attention', 'aria-labelledby': 'attention-h', dataset: { state: 'loading' } },
    h('h2', { id: 'attention-h' }, heading, ' ', count), status, list, more);
  let alerts = [];
  let all = false;
  const wheres = new Map(); // alert id → its "where" line, relabelled as plants load
  more.addEventListener('click', () => { all = !all; render(); });

  async function load() {
    try {
      const res = await get(path, { signal });
      alerts = res.alerts;
      el.dataset.state = 'loaded';
      el.dataset.count = String(alerts.length);
      render();
      mark();
    } catch (err) {
      if (signal.aborted) return;
      el.dataset.state = 'failed';
      status.replaceChildren(problemBox(err, 'The alerts'));
    }
  }

  function where(a) {
    const parts = [];
    if (gardenLabel) parts.push(gardenLabel(a));
    parts.push(a.bed_name || `bed ${a.bed}`);
    if (a.plant) parts.push((plantLabel && plantLabel(a)) || `plant ${a.plant.slice(0, 8)}`);
    return `${parts.join(' · ')} — ${levelText(a)} since ${day(a.since)}`;
  }

  function render() {
    count.textContent = alerts.length ? `(${alerts.length})` : '';
    status.textContent = alerts.length ? '' : 'Nothing needs attention: every bed and plant is within its thresholds.';
    status.hidden = alerts.length > 0;
    const visible = all ? alerts : alerts.slice(0, shown);
    wheres.clear();
    list.replaceChildren(...visible.map(item));
    more.hidden = alerts.length <= shown;
    more.textContent = all ? 'Show fewer' : `Show all ${alerts.length}`;
  }

  function item(a) {
    const action = h('div', { class: 'actions' });
    const li = h('li', { class: `alert kind-${a.kind}`, dataset: { alert: String(a.id), kind: a.kind } },
      h('div', { class: 'alert-head' },
        h('span', { class: 'alert-badge' }, kindText[a.kind] || a.kind),
        h('strong', { class: 'alert-title' }, a.advice.title)),
      wheres.set(a.id, h('p', { class: 'alert-where' }, where(a))).get(a.id),
      h('details', { class: 'advice' }, h('summary', {}, 'What to do'), h('ol', {}, a.advice.steps.map((s) => h('li', {}, s)))),
      action);
    if (a.task) {
      action.append(h('p', { class: 'ok task-made', dataset: { task: String(a.task) } }, `Task ${a.task} is in the logbook.`));
    } else {
      Promise.resolve(canTask ? canTask(a) : false).then((ok) => {
        if (ok && !signal.aborted) action.append(taskButton(a, action));
      }, () => {});
    }
    return li;
  }

  function taskButton(a, action) {
    const button = h('button', { type: 'button', class: 'small make-task' }, 'Make it a task');
    button.addEventListener('click', () => {
      const f = form({
        className: 'inline task-form',
        submit: 'Create task',
        fields: [
          { name: 'assignee', label: 'Assign to (username, optional)', autocomplete: 'off', maxlength: 150 },
          { name: 'at', label: 'Due', type: 'date', value: today() },
        ],
        onSubmit: async (v) => {
          const body = {};
          if (v.assignee.trim()) body.assignee = v.assignee.trim();
          if (v.at) body.at = v.at;
          const log = await post(`/companies/${a.company}/gardens/${a.garden}/alerts/${a.id}/task`, body, { signal });
          a.task = log.id;
          action.replaceChildren(h('p', { class: 'ok task-made', dataset: { task: String(log.id) } }, `Task ${log.id} is in the logbook: ${log.title}`));
          announce(`Task created: ${log.title}`);
        },
      });
      const cancel = h('button', { type: 'button', class: 'link' }, 'Cancel');
      cancel.addEventListener('click', () => action.replaceChildren(button));
      f.querySelector('.actions').append(cancel);
      action.replaceChildren(f);
      f.querySelector('input').focus();
    });
    return button;
  }

  // mark makes plants and beds with an open alert stand out on the map; call it again
  // after the map's markers are redrawn.
  function mark() {
    if (!mapEl) return;
    const plants = new Set(alerts.filter((a) => a.plant).map((a) => `${a.bed}/${a.plant}`));
    const beds = new Set(alerts.filter((a) => !a.plant).map((a) => String(a.bed)));
    for (const c of mapEl.querySelectorAll('circle.plant')) c.classList.toggle('alerting', plants.has(c.dataset.key));
    for (const g of mapEl.querySelectorAll('g.bed')) g.classList.toggle('alerting', beds.has(g.dataset.bed));
    mapEl.dataset.alerting = String(mapEl.querySelectorAll('.alerting').length);
    // Plant names may be known by now; open task forms stay as they are.
    for (const a of alerts) wheres.get(a.id)?.replaceChildren(where(a));
  }

  load();
  return { el, mark, reload: load };
}

// gardenAdmin answers whether the caller administers a garden, asking each garden once.
export function gardenAdmin(signal) {
  const cache = new Map();
  return (a) => {
    const key = `${a.company}/${a.garden}`;
    if (!cache.has(key)) {
      cache.set(key, get(`/companies/${a.company}/gardens/${a.garden}/role`, { signal }).then((r) => r.role === 'admin', () => false));
    }
    return cache.get(key);
  };
}
