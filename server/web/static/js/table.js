import { h } from './ui.js';

// sortableTable renders rows under column headers that sort when activated (click,
// Enter or Space on the header button). columns: [{key, label, value(row) for
// sorting, cell(row) → node or text, numeric}]. Rows are selectable when onSelect is
// given: click, or Enter/Space on a focused row.
export function sortableTable({ columns, caption, rowKey, onSelect, empty }) {
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
  const table = h('table', { class: 'data' },
    caption ? h('caption', {}, caption) : null,
    h('thead', {}, h('tr', {}, headers.map((x) => x.th))),
    tbody);
  const wrap = h('div', { class: 'table-wrap' }, table);

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
        tr.append(h('td', { class: c.numeric ? 'num' : undefined }, v ?? '–'));
      }
      return tr;
    });
    if (trs.length === 0 && empty) {
      trs.push(h('tr', {}, h('td', { colspan: columns.length, class: 'empty' }, empty)));
    }
    tbody.replaceChildren(...trs);
  }

  return {
    el: wrap,
    table,
    setRows(r) { rows = r; render(); },
    select(key) {
      selected = key === null ? null : String(key);
      for (const tr of tbody.rows) if (tr.dataset.key !== undefined) tr.setAttribute('aria-selected', String(tr.dataset.key === selected));
    },
    row(key) { return [...tbody.rows].find((tr) => tr.dataset.key === String(key)) || null; },
  };
}
