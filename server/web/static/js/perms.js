import { get, post, session } from './api.js';
import { h, form, problemBox, announce } from './ui.js';
import { sortableTable } from './table.js';

// permissionsPanel lists, grants, changes and revokes the permissions of a company or
// garden (base is its API path). Admins only: the caller checked the role. It returns
// the panel (el) and a promise that settles once the list has its first answer
// (loaded), when the panel stops changing size by itself.
export function permissionsPanel(base, what, signal) {
  const box = h('div', { class: 'problems' });
  const me = session()?.username;
  const roleSelect = (p) => {
    const sel = h('select', { 'aria-label': `Role of ${p.username}`, disabled: p.username === me },
      h('option', { value: 'u', selected: p.permission === 'u' }, 'reader'),
      h('option', { value: 'a', selected: p.permission === 'a' }, 'admin'));
    sel.addEventListener('change', () => act(() => post(base + '/createPermission', { username: p.username, permission: sel.value }),
      `${p.username} is now ${sel.value === 'a' ? 'an admin' : 'a reader'}.`));
    return sel;
  };
  const removeBtn = (p) => {
    if (p.username === me) return h('span', { class: 'hint' }, 'you');
    const b = h('button', { type: 'button', class: 'danger small', 'aria-label': `Revoke the permission of ${p.username}` }, 'Revoke');
    b.addEventListener('click', () => act(() => post(base + '/removePermission', { username: p.username }), `${p.username}'s permission was revoked.`));
    return b;
  };
  const table = sortableTable({
    caption: `People with access to this ${what}`,
    rowKey: (p) => p.username,
    empty: 'Nobody has a permission here yet.',
    columns: [
      { key: 'username', label: 'User' },
      { key: 'permission', label: 'Role', cell: roleSelect },
      { key: 'actions', label: 'Revoke', value: () => null, cell: removeBtn },
    ],
  });
  // Only the latest refresh shows its answer: the first one may still be on its way
  // when a grant's refresh returns, and its older list must not replace the newer.
  let latest = 0;
  async function refresh() {
    const mine = ++latest;
    try {
      const rows = await get(base + '/permissions', { signal });
      if (mine === latest) table.setRows(rows);
    } catch (err) {
      if (err.name !== 'AbortError' && mine === latest) box.replaceChildren(problemBox(err, 'Permissions'));
    }
  }
  async function act(fn, done) {
    box.replaceChildren();
    try {
      await fn();
      announce(done);
    } catch (err) {
      box.replaceChildren(problemBox(err));
    }
    await refresh();
  }
  const grant = form({
    className: 'inline',
    submit: 'Grant',
    fields: [
      { name: 'username', label: 'Username', required: true, autocomplete: 'off' },
      { name: 'permission', label: 'Role', type: 'select', value: 'u', options: [{ value: 'u', label: 'reader' }, { value: 'a', label: 'admin' }] },
    ],
    onSubmit: async (v, f) => {
      await post(base + '/createPermission', { username: v.username, permission: v.permission });
      announce(`${v.username} can now ${v.permission === 'a' ? 'administer' : 'read'} this ${what}.`);
      f.reset();
      await refresh();
    },
  });
  const loaded = refresh();
  const el = h('section', { class: 'card', 'aria-labelledby': `perm-${what}` },
    h('h2', { id: `perm-${what}` }, 'Permissions'),
    h('p', { class: 'hint' }, `Readers see the ${what}; admins may also change it and its permissions.`),
    table.el, box, h('h3', {}, 'Grant access'), grant);
  return { el, loaded };
}
