// renderTable's own layout of plain one-line cells against cli-table3's (the layout it replaces
// there): same text for random tables of ASCII and coloured cells, placeholders and numbers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { NO_BORDERS, renderTable, type Cell } from '../../src/render/table.ts';

const Table = createRequire(import.meta.url)('cli-table3') as typeof import('cli-table3');

/** What renderTable printed with cli-table3 for every table (before its own layout). */
function viaCliTable3(headers: string[], rows: Cell[][]): string {
  const t = new Table({ head: headers.map((h) => h.toUpperCase()), chars: NO_BORDERS, style: { head: [], border: [], 'padding-left': 0, 'padding-right': 3, compact: true } });
  for (const r of rows) t.push(r.map((c) => (c === null || c === undefined || c === '' ? '<none>' : String(c))));
  return (
    t
      .toString()
      .split('\n')
      .map((l) => l.trimEnd())
      .join('\n') + '\n'
  );
}

test('renderTable lays out plain cells exactly as cli-table3 does', () => {
  let seed = 12345;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const word = () => {
    const w = Array.from({ length: rand(14) }, () => String.fromCharCode(0x20 + rand(95))).join('');
    return rand(5) === 0 ? `\u001b[3${1 + rand(3)}m${w}\u001b[39m` : rand(7) === 0 ? `\u001b[1m${w}\u001b[22m` : w;
  };
  for (let k = 0; k < 300; k++) {
    const headers = Array.from({ length: 1 + rand(6) }, () => word().replace(/\u001b\[[0-9;]*m/g, '') || 'h');
    const rows: Cell[][] = Array.from({ length: rand(6) }, () => headers.map(() => [null, undefined, '', rand(1000), true][rand(12)] ?? word()));
    assert.equal(renderTable(headers, rows), viaCliTable3(headers, rows), JSON.stringify({ headers, rows }));
  }
});

test('renderTable: cells that are not one plain line still go through cli-table3', () => {
  const rows: Cell[][] = [
    ['a\nb', 'x'],
    ['ü', 'y'],
    ['日本', 'z'],
    ['\ttab', 'w'],
  ];
  assert.equal(renderTable(['name', 'v'], rows), viaCliTable3(['name', 'v'], rows));
});
