import { get, post, paths } from './api.js';
import { h, form, setTitle, problemBox } from './ui.js';
import { thumbnail } from './images.js';
import { go } from './main.js';
import { attention, gardenAdmin } from './alerts.js';

// The home page: every company and garden the user can read, each garden with a
// thumbnail of its picture, and the forms to create what the user's roles allow.
export async function home(main, _params, signal) {
  setTitle('Your gardens');
  const [companies, gardens] = await Promise.all([get('/companies', { signal }), get('/gardens', { signal })]);
  const byId = new Map(companies.map((c) => [c.id, c]));
  // Companies seen only through a garden permission are readable one by one.
  const missing = [...new Set(gardens.map((g) => g.company))].filter((id) => !byId.has(id));
  await Promise.all(missing.map(async (id) => byId.set(id, await get(paths.company(id), { signal }))));
  const roles = new Map();
  await Promise.all([...byId.keys()].map(async (id) => roles.set(id, (await get(paths.company(id) + '/role', { signal })).role)));

  const newCompany = form({
    className: 'inline',
    submit: 'Create company',
    fields: [{ name: 'name', label: 'New company name', required: true, maxlength: 128 }],
    onSubmit: async (v) => {
      const c = await post('/companies', { name: v.name });
      go(`#/c/${c.id}`);
    },
  });
  main.append(h('h1', {}, 'Your gardens'));
  const names = new Map(gardens.map((g) => [g.id, g.name]));
  if (gardens.length) main.append(attention({ path: '/alerts', signal, canTask: gardenAdmin(signal), gardenLabel: (a) => names.get(a.garden) || `garden ${a.garden}` }).el);
  if (byId.size === 0) {
    main.append(h('p', { class: 'empty' }, 'You have no company or garden yet. Create a company to start, or ask an admin of one to give you access.'));
  }
  const observer = new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (!e.isIntersecting) continue;
      observer.unobserve(e.target);
      loadThumb(e.target, signal);
    }
  }, { rootMargin: '200px' });
  for (const c of [...byId.values()].sort((a, b) => a.name.localeCompare(b.name))) {
    const gs = gardens.filter((g) => g.company === c.id).sort((a, b) => a.name.localeCompare(b.name));
    const admin = roles.get(c.id) === 'admin';
    const list = h('ul', { class: 'gardens' }, gs.map((g) => {
      const thumb = h('div', { class: 'thumb', dataset: { c: c.id, g: g.id, image: g.image_path ? '1' : '' } },
        g.image_path ? h('span', { class: 'hint' }, 'Loading picture…') : h('span', { class: 'hint' }, 'No picture yet'));
      if (g.image_path) observer.observe(thumb);
      return h('li', { class: 'garden-card' }, h('a', { href: `#/c/${c.id}/g/${g.id}` }, thumb, h('span', { class: 'name' }, g.name)));
    }));
    if (!gs.length) list.append(h('li', { class: 'empty' }, 'No gardens yet.'));
    const section = h('section', { class: 'company', 'aria-labelledby': `co-${c.id}` },
      h('h2', { id: `co-${c.id}` }, h('a', { href: `#/c/${c.id}` }, c.name), admin ? h('span', { class: 'badge' }, 'admin') : null),
      list);
    if (admin) {
      section.append(form({
        className: 'inline',
        submit: 'Create garden',
        fields: [{ name: 'name', label: `New garden in ${c.name}`, required: true, maxlength: 128 }],
        onSubmit: async (v) => {
          const g = await post(paths.company(c.id) + '/gardens', { name: v.name });
          go(`#/c/${c.id}/g/${g.id}`);
        },
      }));
    }
    main.append(section);
  }
  main.append(h('section', { class: 'card' }, h('h2', {}, 'New company'), h('p', { class: 'hint' }, 'You become its admin.'), newCompany));
  return () => observer.disconnect();
}

async function loadThumb(el, signal) {
  try {
    const img = await thumbnail(el.dataset.c, el.dataset.g, signal);
    if (!img) { el.replaceChildren(h('span', { class: 'hint' }, 'No picture yet')); return; }
    const tag = h('img', { src: img.url, alt: '', width: img.width, height: img.height });
    // Decoded, the blob is not needed any more.
    tag.addEventListener('load', () => URL.revokeObjectURL(img.url), { once: true });
    el.replaceChildren(tag);
  } catch (err) {
    if (err.name !== 'AbortError') el.replaceChildren(problemBox(err));
  }
}
