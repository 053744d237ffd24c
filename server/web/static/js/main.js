import { session, onSignedOut, post, clearSession } from './api.js';
import { h, clear, problemBox, announce } from './ui.js';

// The app is one page; the part after # names the view, so reloads and links work
// without the server knowing the views. Each view module exports
// render(main, params, signal) and may return a clean-up function.

const routes = [
  [/^\/login$/, () => import('./auth.js').then((m) => m.login), { public: true }],
  [/^\/register$/, () => import('./auth.js').then((m) => m.register), { public: true }],
  [/^\/profile$/, () => import('./auth.js').then((m) => m.profile)],
  [/^\/?$/, () => import('./home.js').then((m) => m.home)],
  [/^\/c\/(\d+)$/, () => import('./company.js').then((m) => m.company)],
  [/^\/c\/(\d+)\/g\/(\d+)\/admin$/, () => import('./admin.js').then((m) => m.gardenAdmin)],
  [/^\/c\/(\d+)\/g\/(\d+)\/b\/(\d+)\/3d$/, () => import('./view3d.js').then((m) => m.bed3d)],
  [/^\/tasks$/, () => import('./tasks.js').then((m) => m.tasks)],
  [/^\/c\/(\d+)\/g\/(\d+)\/logbook(?:\?(.*))?$/, () => import('./logbook.js').then((m) => m.logbook)],
  [/^\/c\/(\d+)\/g\/(\d+)\/b\/(\d+)\/log$/, () => import('./target.js').then((m) => m.bedPage)],
  [/^\/c\/(\d+)\/g\/(\d+)\/b\/(\d+)\/p\/([\w.:%-]+)$/, () => import('./target.js').then((m) => m.plantPage)],
  [/^\/c\/(\d+)\/g\/(\d+)(?:\/b\/(\d+))?$/, () => import('./garden.js').then((m) => m.garden)],
];

let current = { cleanup: null, abort: null };
let notice = '';

export function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function nav() {
  const el = document.getElementById('nav');
  const s = session();
  if (!s) {
    clear(el);
    return;
  }
  const logout = h('button', { type: 'button', class: 'link' }, 'Log out');
  logout.addEventListener('click', async () => {
    try { await post('/logout'); } catch { /* the token is dropped either way */ }
    clearSession();
    go('#/login');
  });
  clear(el, h('a', { href: '#/' }, 'Gardens'), h('a', { href: '#/tasks' }, 'My tasks'), h('a', { href: '#/profile', 'aria-label': `Profile of ${s.username}` }, s.username), logout);
}

async function route() {
  const hash = location.hash;
  if (hash && !hash.startsWith('#/')) return; // in-page anchors such as #main
  const path = hash.slice(1) || '/';
  const main = document.getElementById('main');
  current.abort?.abort();
  try { current.cleanup?.(); } catch { /* a view's clean-up must not block the next */ }
  current = { cleanup: null, abort: new AbortController() };
  const signal = current.abort.signal;
  const match = routes.map(([re, load, opts]) => [path.match(re), load, opts || {}]).find(([m]) => m);
  if (!match) {
    clear(main, h('h1', {}, 'Not found'), h('p', {}, 'There is no page here. '), h('a', { href: '#/' }, 'Back to your gardens'));
    return;
  }
  const [m, load, opts] = match;
  if (!opts.public && !session()) {
    sessionStorage.setItem('gardend.return', hash);
    go('#/login');
    return;
  }
  nav();
  for (const k of Object.keys(main.dataset)) delete main.dataset[k];
  clear(main, h('p', { class: 'loading' }, 'Loading…'));
  if (notice) {
    main.prepend(h('p', { class: 'notice', role: 'status' }, notice));
    notice = '';
  }
  try {
    const view = await load();
    if (signal.aborted) return;
    const keep = main.querySelector('.notice');
    clear(main, keep);
    const cleanup = await view(main, m.slice(1), signal);
    if (!signal.aborted) current.cleanup = cleanup || null;
    else cleanup?.();
  } catch (err) {
    if (err.name === 'AbortError' || signal.aborted) return;
    clear(main, h('h1', {}, 'Something went wrong'), problemBox(err));
  }
}

onSignedOut((msg) => {
  notice = msg;
  announce(msg);
  go('#/login');
});

document.getElementById('skip').addEventListener('click', (ev) => {
  ev.preventDefault();
  document.getElementById('main').focus();
});
window.addEventListener('hashchange', route);
route();
