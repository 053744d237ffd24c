import { post, get, put, saveSession, session, clearSession } from './api.js';
import { h, form, setTitle, announce, problemBox } from './ui.js';
import { go } from './main.js';
import { panels, loadLayout, saveLayout } from './widgets.js';

const registrationOpen = () => document.querySelector('meta[name="gardend-registration"]')?.content === 'open';

function afterLogin() {
  const back = sessionStorage.getItem('gardend.return');
  sessionStorage.removeItem('gardend.return');
  go(back && back !== '#/login' ? back : '#/');
}

export function login(main) {
  setTitle('Log in');
  main.append(h('section', { class: 'card narrow' },
    h('h1', {}, 'Log in'),
    form({
      submit: 'Log in',
      fields: [
        { name: 'username', label: 'Username', autocomplete: 'username', required: true },
        { name: 'password', label: 'Password', type: 'password', autocomplete: 'current-password', required: true },
        { name: 'remember', label: 'Keep me logged in on this device', type: 'checkbox', value: false },
      ],
      onSubmit: async (v) => {
        const res = await post('/login', { username: v.username, password: v.password });
        saveSession(res, v.username, v.remember);
        announce(`Logged in as ${v.username}`);
        afterLogin();
      },
    }),
    registrationOpen() ? h('p', {}, 'New here? ', h('a', { href: '#/register' }, 'Create an account')) : null));
  main.querySelector('input')?.focus();
}

export function register(main) {
  setTitle('Create an account');
  if (!registrationOpen()) {
    main.append(h('section', { class: 'card narrow' }, h('h1', {}, 'Create an account'),
      h('p', {}, 'This gardend does not take sign-ups. Ask its operator for an account.'),
      h('a', { href: '#/login' }, 'Back to log in')));
    return;
  }
  main.append(h('section', { class: 'card narrow' },
    h('h1', {}, 'Create an account'),
    form({
      submit: 'Create account',
      fields: [
        { name: 'username', label: 'Username', autocomplete: 'username', required: true, maxlength: 150 },
        { name: 'first_name', label: 'First name', autocomplete: 'given-name', required: true },
        { name: 'last_name', label: 'Last name', autocomplete: 'family-name', required: true },
        { name: 'password', label: 'Password (at least 8 characters, not only digits)', type: 'password', autocomplete: 'new-password', required: true },
        { name: 'confirm', label: 'Password again', type: 'password', autocomplete: 'new-password', required: true },
      ],
      onSubmit: async (v) => {
        if (v.password !== v.confirm) throw Object.assign(new Error('The two passwords differ.'), { fields: { confirm: 'Type the same password twice.' } });
        const res = await post('/register', { username: v.username, password: v.password, first_name: v.first_name, last_name: v.last_name });
        saveSession(res, v.username, false);
        afterLogin();
      },
    }),
    h('p', {}, 'Have an account? ', h('a', { href: '#/login' }, 'Log in'))));
  main.querySelector('input')?.focus();
}

export async function profile(main, _params, signal) {
  setTitle('Profile');
  const [user, layout] = await Promise.all([get('/user', { signal }), loadLayout(signal)]);
  const s = session();
  const details = form({
    submit: 'Save profile',
    fields: [
      { name: 'username', label: 'Username', value: user.username, autocomplete: 'username', required: true },
      { name: 'first_name', label: 'First name', value: user.first_name, autocomplete: 'given-name', required: true },
      { name: 'last_name', label: 'Last name', value: user.last_name, autocomplete: 'family-name', required: true },
      { name: 'email', label: 'Email', type: 'email', value: user.email, autocomplete: 'email' },
    ],
    onSubmit: async (v) => {
      const changed = {};
      for (const k of ['username', 'first_name', 'last_name', 'email']) if (v[k] !== user[k]) changed[k] = v[k];
      if (!Object.keys(changed).length) { announce('Nothing changed.'); return; }
      const res = await put('/user', changed);
      Object.assign(user, res);
      if (changed.username) saveSession({ token: s.token, expiry: s.expiry }, res.username, !!localStorage.getItem('gardend.session'));
      details.after(saved('Profile saved.'));
      document.getElementById('nav').querySelector('a[href="#/profile"]').textContent = res.username;
    },
  });
  const password = form({
    submit: 'Change password',
    fields: [
      { name: 'password', label: 'New password', type: 'password', autocomplete: 'new-password', required: true },
      { name: 'confirm', label: 'New password again', type: 'password', autocomplete: 'new-password', required: true },
    ],
    note: h('p', { class: 'hint' }, 'Changing the password logs out your other sessions; this one stays.'),
    onSubmit: async (v, f) => {
      if (v.password !== v.confirm) throw Object.assign(new Error('The two passwords differ.'), { fields: { confirm: 'Type the same password twice.' } });
      await put('/user', { password: v.password });
      f.reset();
      password.after(saved('Password changed.'));
    },
  });
  const shown = new Set(layout.shown);
  const layoutForm = form({
    submit: 'Save layout',
    fields: panels.map((p) => ({ name: p.id, label: p.label, type: 'checkbox', value: shown.has(p.id) })),
    note: h('p', { class: 'hint' }, 'Which panels the garden page shows. Kept with your account, so it follows you to other devices.'),
    onSubmit: async (v) => {
      const ids = panels.filter((p) => v[p.id]).map((p) => p.id);
      if (!ids.length) throw new Error('Keep at least one panel.');
      await saveLayout(ids);
      layoutForm.after(saved('Layout saved.'));
    },
  });
  const everywhere = h('button', { type: 'button' }, 'Log out everywhere');
  const outBox = h('div');
  everywhere.addEventListener('click', async () => {
    try {
      await post('/logoutall');
      clearSession();
      go('#/login');
    } catch (err) {
      outBox.replaceChildren(problemBox(err));
    }
  });
  main.append(h('h1', {}, 'Your profile'),
    h('div', { class: 'grid2' },
      h('section', { class: 'card' }, h('h2', {}, 'Details'), details,
        h('p', { class: 'hint' }, `Member since ${new Date(user.date_joined).toLocaleDateString()}.`)),
      h('section', { class: 'card' }, h('h2', {}, 'Password'), password),
      h('section', { class: 'card' }, h('h2', {}, 'Garden page layout'), layoutForm),
      h('section', { class: 'card' }, h('h2', {}, 'Sessions'),
        h('p', {}, 'End every session of your account, on every device.'), everywhere, outBox)));
}

function saved(text) {
  const p = h('p', { class: 'ok', role: 'status' }, text);
  setTimeout(() => p.remove(), 4000);
  return p;
}
