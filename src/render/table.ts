/**
 * kubectl-like tables: no borders, upper-case headers, columns separated by three spaces, the
 * first column the object's name, and `<none>` for empty cells (or a column's own placeholder,
 * such as `<pending>` for an IP not assigned yet).
 */
import { createRequire } from 'node:module';

// cli-table3 is loaded on the first table (commands that print none never load it).
const require = createRequire(import.meta.url);

/** A column: header (printed upper-case) and the placeholder for empty cells (default `<none>`). */
export interface Column {
  header: string;
  placeholder?: string;
}

/** A cell: text, or nothing (rendered as the column's placeholder). Numbers are printed as is. */
export type Cell = string | number | boolean | null | undefined;

/** cli-table3's border characters, all empty: the tables print like kubectl's. */
export const NO_BORDERS = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: '',
};

export const NONE = '<none>';
export const PENDING = '<pending>';

/**
 * Renders rows under `columns` (cells may carry chalk colours; widths ignore them). Lists must be
 * joined by the caller (kubectl joins with commas). Returns the lines with a trailing newline and
 * no trailing blanks. With no rows and `empty` given, returns `empty` instead (kubectl's
 * `No resources found.`); without it, the header line alone.
 */
export function renderTable(columns: readonly (Column | string)[], rows: readonly (readonly Cell[])[], empty?: string, opts: TableOptions = {}): string {
  if (rows.length === 0 && empty !== undefined) return empty.endsWith('\n') ? empty : empty + '\n';
  const cols: Column[] = columns.map((c) => (typeof c === 'string' ? { header: c } : c));
  const head = cols.map((c) => c.header.toUpperCase());
  const cells = rows.map((row) => cols.map((c, i) => cellText(row[i], c.placeholder ?? NONE)));
  let colWidths: Array<number | null> | undefined;
  if (opts.maxWidth !== undefined && cols.length > 1) {
    // Natural widths (3 spaces of padding each); when the row is wider than maxWidth, the last
    // column gets what is left (at least 40) and wraps at word boundaries.
    const widths = head.map((h, i) => Math.max(visibleLength(h), ...cells.map((r) => visibleLength(r[i]!))) + 3);
    const others = widths.slice(0, -1).reduce((a, b) => a + b, 0);
    if (others + widths[widths.length - 1]! > opts.maxWidth) colWidths = [...widths.slice(0, -1).map(() => null), Math.max(40, opts.maxWidth - others)];
  }
  if (!colWidths && [head, ...cells].every((row) => row.every(isPlainLine))) return plainTable(head, cells);
  const Table = require('cli-table3') as typeof import('cli-table3');
  const table = new Table({
    head,
    chars: NO_BORDERS,
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 3, compact: true },
    ...(colWidths ? { colWidths, wordWrap: true } : {}),
  });
  for (const row of cells) table.push(row);
  return (
    table
      .toString()
      .split('\n')
      .map((l) => l.trimEnd())
      .join('\n') + '\n'
  );
}

/** Options of renderTable. */
export interface TableOptions {
  /** Lines at most this wide: the last column wraps at word boundaries (other columns keep their width). */
  maxWidth?: number;
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;

// eslint-disable-next-line no-control-regex
const PLAIN_LINE = /^(?:[\x20-\x7e]|\u001b\[[0-9;]*m)*$/;

/** A cell printed on one line, every character one column wide: printable ASCII and colour codes. */
function isPlainLine(cell: string): boolean {
  return PLAIN_LINE.test(cell);
}

/**
 * What cli-table3 prints for one-line, one-column-per-character cells with the options above (no
 * borders, left-aligned, 3 spaces of right padding, no wrapping), without loading it (test/unit/
 * table.test.ts compares the two): each column as wide as its widest cell plus 3, lines trimmed.
 */
function plainTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [head, ...rows];
  const widths = head.map((_, i) => Math.max(...all.map((r) => visibleLength(r[i]!))) + 3);
  return (
    all
      .map((r) =>
        r
          .map((cell, i) => cell + ' '.repeat(widths[i]! - visibleLength(cell)))
          .join('')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

/** The printed width of a cell (colour codes do not count). */
function visibleLength(s: string): number {
  return s.replace(ANSI, '').length;
}

function cellText(cell: Cell, placeholder: string): string {
  if (cell === null || cell === undefined || cell === '') return placeholder;
  return String(cell);
}
