/**
 * kubectl-like tables: no borders, upper-case headers, columns separated by three spaces, the
 * first column the object's name, and `<none>` for empty cells (or a column's own placeholder,
 * such as `<pending>` for an IP not assigned yet).
 */
import Table from 'cli-table3';

/** A column: header (printed upper-case) and the placeholder for empty cells (default `<none>`). */
export interface Column {
  header: string;
  placeholder?: string;
}

/** A cell: text, or nothing (rendered as the column's placeholder). Numbers are printed as is. */
export type Cell = string | number | boolean | null | undefined;

const NO_BORDERS = {
  top: '', 'top-mid': '', 'top-left': '', 'top-right': '',
  bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '',
  left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '', middle: '',
};

export const NONE = '<none>';
export const PENDING = '<pending>';

/**
 * Renders rows under `columns` (cells may carry chalk colours; widths ignore them). Lists must be
 * joined by the caller (kubectl joins with commas). Returns the lines with a trailing newline and
 * no trailing blanks. With no rows and `empty` given, returns `empty` instead (kubectl's
 * `No resources found.`); without it, the header line alone.
 */
export function renderTable(columns: readonly (Column | string)[], rows: readonly (readonly Cell[])[], empty?: string): string {
  if (rows.length === 0 && empty !== undefined) return empty.endsWith('\n') ? empty : empty + '\n';
  const cols: Column[] = columns.map((c) => (typeof c === 'string' ? { header: c } : c));
  const table = new Table({
    head: cols.map((c) => c.header.toUpperCase()),
    chars: NO_BORDERS,
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 3, compact: true },
  });
  for (const row of rows) {
    table.push(cols.map((c, i) => cellText(row[i], c.placeholder ?? NONE)));
  }
  return table.toString().split('\n').map((l) => l.trimEnd()).join('\n') + '\n';
}

function cellText(cell: Cell, placeholder: string): string {
  if (cell === null || cell === undefined || cell === '') return placeholder;
  return String(cell);
}
