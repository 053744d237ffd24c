import { get, put, paths } from './api.js';
import { h, setTitle, problemBox, announce } from './ui.js';
import { bedsOf, bedName } from './gardendata.js';
import { dueWords } from './logbook.js';

// "My tasks": the caller's pending tasks in every garden they can read, soonest due
// first, each marked done with one tap.
export async function tasks(main, _params, signal) {
  setTitle('My tasks');
  const [answer, gardens, companies] = await Promise.all([get('/tasks', { signal }), get('/gardens', { signal }), get('/companies', { signal })]);
  if (signal.aborted) return;
  const gardenName = new Map(gardens.map((x) => [x.id, x.name]));
  const companyName = new Map(companies.map((x) => [x.id, x.name]));
  const status = h('p', { class: 'progress', role: 'status', 'aria-live': 'polite' });
  const list = h('ol', { class: 'timeline tasks' });
  const count = () => {
    const n = list.children.length;
    status.textContent = n === 0 ? 'Nothing to do: no pending task is assigned to you.' : `${n} pending ${n === 1 ? 'task' : 'tasks'}`;
    list.dataset.count = String(n);
  };
  for (const t of answer.tasks) {
    const at = new Date(t.at);
    const garden = h('a', { href: `#/c/${t.company}/g/${t.garden}/logbook` }, gardenName.get(t.garden) || `garden ${t.garden}`);
    const where = h('span', { class: 'where' }, garden, companyName.has(t.company) ? ` (${companyName.get(t.company)})` : '');
    if (t.bed !== null && t.bed !== undefined) {
      const bed = h('a', { class: 'bed-name', href: `#/c/${t.company}/g/${t.garden}/b/${t.bed}/log` }, '…');
      where.append(' · ', bed);
      bedsOf(t.company, t.garden).then((beds) => { bed.textContent = bedName(beds, t.bed); }, () => { bed.textContent = 'a bed'; });
    }
    const overdue = dueWords(at, t.status).startsWith('overdue');
    const done = h('button', { type: 'button', class: 'primary' }, 'Done');
    const box = h('div', { class: 'log-actions' }, done);
    const li = h('li', { class: 'log log-task' + (overdue ? ' overdue' : ''), dataset: { id: String(t.id) } },
      h('div', { class: 'log-head' }, h('strong', { class: 'log-title' }, t.title)),
      h('div', { class: 'log-meta' }, h('time', { datetime: t.at }, `due ${at.toLocaleDateString()} (${dueWords(at, t.status)})`), ' · ', where, ` · from ${t.author}`),
      t.notes ? h('p', { class: 'log-notes' }, t.notes) : null,
      box);
    done.addEventListener('click', async () => {
      done.disabled = true;
      try {
        await put(paths.log(t.company, t.garden, t.id), { status: 'done' });
        li.remove();
        count();
        announce(`Done: ${t.title}`);
      } catch (err) {
        box.append(problemBox(err));
        done.disabled = false;
      }
    });
    list.append(li);
  }
  count();
  main.append(h('h1', {}, 'My tasks'), h('section', { class: 'card' }, status, list));
}
