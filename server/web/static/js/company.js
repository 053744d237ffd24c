import { get, post, del, paths } from './api.js';
import { h, form, setTitle, confirmDialog, problemBox } from './ui.js';
import { permissionsPanel } from './perms.js';
import { go } from './main.js';

// A company's page: its gardens and, for its admins, new gardens, permissions and
// deletion.
export async function company(main, [c], signal) {
  const [co, gardens, role] = await Promise.all([
    get(paths.company(c), { signal }), get(paths.company(c) + '/gardens', { signal }), get(paths.company(c) + '/role', { signal })]);
  setTitle(co.name);
  const admin = role.role === 'admin';
  main.append(
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'Gardens'), ' › ', co.name),
    h('h1', {}, co.name, admin ? h('span', { class: 'badge' }, 'admin') : null),
    h('section', { class: 'card' }, h('h2', {}, 'Gardens'),
      gardens.length
        ? h('ul', { class: 'plain' }, gardens.map((g) => h('li', {}, h('a', { href: `#/c/${c}/g/${g.id}` }, g.name))))
        : h('p', { class: 'empty' }, 'No gardens yet.'),
      admin ? form({
        className: 'inline', submit: 'Create garden',
        fields: [{ name: 'name', label: 'New garden name', required: true, maxlength: 128 }],
        onSubmit: async (v) => { const g = await post(paths.company(c) + '/gardens', { name: v.name }); go(`#/c/${c}/g/${g.id}`); },
      }) : null));
  if (!admin) return;
  const perms = permissionsPanel(paths.company(c), 'company', signal);
  main.append(perms.el);
  perms.loaded.then(() => { if (!signal.aborted) main.dataset.loaded = 'true'; });
  const box = h('div');
  const remove = h('button', { type: 'button', class: 'danger' }, 'Delete company');
  remove.addEventListener('click', async () => {
    if (!await confirmDialog(`Delete the company “${co.name}” with its ${gardens.length} garden(s), their beds, pictures and permissions? This cannot be undone.`, 'Delete company')) return;
    try {
      await del(paths.company(c));
      go('#/');
    } catch (err) {
      box.replaceChildren(problemBox(err));
    }
  });
  main.append(h('section', { class: 'card danger-zone' }, h('h2', {}, 'Delete'), remove, box));
}
