import { h } from './ui.js';

// sortableTable renders rows under column headers that sort when activated (click,
// Enter or Space on the header button). columns: [{key, label, value(row) for
// sorting, cell(row) → node or text, numeric, title}]. Rows are selectable when
// onSelect is given: click, or Enter/Space on a focused row. With cards, a table too
// narrow for its columns (a phone) shows each row as a card instead (app.css, by the
// width of its container), the title column on top and a select to sort by.
export function sortableTable({ columns, caption, rowKey, onSelect, empty, cards }) {
  let rows = [];
  let sortKey = null;
  let dir = 1;
  let selected = null;
  const tbody = h('tbody');
  const headers = columns.map((c) => {
    const btn = h('button', { type: 'button', class: 'sort' }, c.label);
    const th = h('th', { scope: 'col', 'aria-sort': 'none', class: c.numeric ? 'num' : undefined }, btn);
    btn.addEventListener('click', () => {
      dir = sortKey === c.key ? -dir : 1;
      sortKey = c.key;
      for (const o of headers) o.th.setAttribute('aria-sort', 'none');
      th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
      render();
    });
    return { th, c };
  });
  const table = h('table', { class: 'data' + (cards ? ' cards' : '') },
    caption ? h('caption', {}, caption) : null,
    h('thead', {}, h('tr', {}, headers.map((x) => x.th))),
    tbody);
  const wrap = h('div', { class: 'table-wrap' + (cards ? ' with-cards' : '') }, cards ? sortSelect() : null, table);

  // The cards' sort control: the same sorting as the headers, which cards hide.
  function sortSelect() {
    const id = 'sort-' + Math.random().toString(36).slice(2, 8);
    const sel = h('select', { id }, h('option', { value: '' }, 'as listed'),
      columns.filter((c) => c.label && c.sortable !== false).flatMap((c) => [
        h('option', { value: c.key + ':1' }, `${c.label} ↑`), h('option', { value: c.key + ':-1' }, `${c.label} ↓`)]));
    sel.addEventListener('change', () => {
      const [key, d] = sel.value.split(':');
      sortKey = key || null;
      dir = Number(d) || 1;
      for (const o of headers) o.th.setAttribute('aria-sort', o.c.key === sortKey ? (dir > 0 ? 'ascending' : 'descending') : 'none');
      render();
    });
    return h('div', { class: 'card-sort' }, h('label', { for: id }, 'Sort by'), sel);
  }

  function value(row, c) {
    const v = c.value ? c.value(row) : row[c.key];
    return v === undefined || v === null ? null : v;
  }

  function render() {
    let list = rows.slice();
    if (sortKey) {
      const c = columns.find((x) => x.key === sortKey);
      list.sort((a, b) => {
        const va = value(a, c), vb = value(b, c);
        if (va === null && vb === null) return 0;
        if (va === null) return 1; // missing values last, whichever the direction
        if (vb === null) return -1;
        return (typeof va === 'number' && typeof vb === 'number' ? va - vb : String(va).localeCompare(String(vb))) * dir;
      });
    }
    const trs = list.map((row) => {
      const key = String(rowKey(row));
      const tr = h('tr', { dataset: { key }, class: row.rowClass });
      if (onSelect) {
        tr.tabIndex = 0;
        tr.classList.add('selectable');
        tr.setAttribute('aria-selected', String(key === selected));
        tr.addEventListener('click', (ev) => { if (!ev.target.closest('button, a')) onSelect(row); });
        tr.addEventListener('keydown', (ev) => {
          if ((ev.key === 'Enter' || ev.key === ' ') && ev.target === tr) { ev.preventDefault(); onSelect(row); }
        });
      }
      for (const c of columns) {
        const v = c.cell ? c.cell(row) : value(row, c);
        const cls = [c.numeric ? 'num' : '', c.title ? 'title-cell' : '', c.className || ''].filter(Boolean).join(' ');
        tr.append(h('td', { class: cls || undefined, dataset: { label: c.label, col: c.key } }, v ?? '–'));
      }
      return tr;
    });
    if (trs.length === 0 && empty) {
      trs.push(h('tr', {}, h('td', { colspan: columns.length, class: 'empty' }, empty)));
    }
    tbody.replaceChildren(...trs);
  }

  // Cards when the table does not fit its box: measured as a table, on every change
  // of the box's width and of the rows.
  let lastWidth = -1;
  function fit() {
    if (!cards || !wrap.isConnected) return;
    wrap.classList.remove('as-cards');
    const over = table.scrollWidth > wrap.clientWidth + 1;
    wrap.classList.toggle('as-cards', over);
    wrap.dataset.view = over ? 'cards' : 'table';
  }
  if (cards) {
    new ResizeObserver(() => {
      if (wrap.clientWidth !== lastWidth) { lastWidth = wrap.clientWidth; fit(); }
    }).observe(wrap);
  }

  return {
    el: wrap,
    table,
    setRows(r) { rows = r; render(); fit(); },
    fit,
    select(key) {
      selected = key === null ? null : String(key);
      for (const tr of tbody.rows) if (tr.dataset.key !== undefined) tr.setAttribute('aria-selected', String(tr.dataset.key === selected));
    },
    row(key) { return [...tbody.rows].find((tr) => tr.dataset.key === String(key)) || null; },
  };
}
