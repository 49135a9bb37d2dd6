import { type RefObject, useEffect } from 'react';

/*
 * Data tables on narrow screens. Every table sits in a `.table-wrap`; when that box is narrower than a table needs
 * (a phone), styles.css lays each row out as a card, each cell on its own line after its column's name. CSS cannot
 * copy a header's text into the cells, so this does: each body cell gets `data-label` from its column header, shown by
 * `::before`. A header that is only for screen readers (an "Actions" column) gives no label: its button speaks for
 * itself.
 *
 * A table drawn as blocks loses its table semantics in some browsers (WebKit), so the same pass states them with ARIA
 * roles (table, rowgroup, row, columnheader, rowheader, cell), which is what those elements mean anyway.
 */

/** The header's visible words: text inside a `.visually-hidden` element does not count. */
function visibleText(node: Node): string {
  if (node.nodeType === Node.TEXT_NODE) return node.textContent ?? '';
  if (node instanceof Element && node.classList.contains('visually-hidden')) return '';
  let text = '';
  for (const child of node.childNodes) text += visibleText(child);
  return text;
}

const setAttr = (el: Element, name: string, value: string) => {
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
};

/** Labels and roles for every table under `root`; cheap and idempotent, so it runs again on every change. */
export function labelTables(root: ParentNode): void {
  for (const table of root.querySelectorAll('table')) {
    setAttr(table, 'role', 'table');
    const labels: string[] = [];
    for (const cell of table.tHead?.rows[0]?.cells ?? []) {
      labels.push(visibleText(cell).replace(/\s+/g, ' ').trim());
      for (let extra = 1; extra < cell.colSpan; extra++) labels.push('');
    }
    for (const group of [table.tHead, ...table.tBodies, table.tFoot]) {
      if (!group) continue;
      setAttr(group, 'role', 'rowgroup');
      const head = group === table.tHead;
      for (const row of group.rows) {
        setAttr(row, 'role', 'row');
        let column = 0;
        for (const cell of row.cells) {
          setAttr(cell, 'role', head ? 'columnheader' : cell.tagName === 'TH' ? 'rowheader' : 'cell');
          if (!head) setAttr(cell, 'data-label', labels[column] ?? '');
          column += cell.colSpan;
        }
      }
    }
  }
}

/**
 * Keeps the tables under `ref` labelled as they render and re-render. A MutationObserver calls back before the next
 * paint, so a new row never shows without its labels; it does not watch attributes, so labelling does not wake it.
 */
export function useTableCards(ref: RefObject<HTMLElement | null>): void {
  useEffect(() => {
    const root = ref.current;
    if (!root) return;
    labelTables(root);
    const observer = new MutationObserver(() => labelTables(root));
    observer.observe(root, { childList: true, subtree: true, characterData: true });
    return () => observer.disconnect();
  }, [ref]);
}
