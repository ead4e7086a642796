/**
 * No import cycle in `src/`, between files or between folders (issue #13, item 6). Every
 * `src/**\/*.ts` is read; its relative module references are resolved: static `import`/`export …
 * from` (type-only ones included, since they still tie the two modules' designs together) and dynamic
 * `import()`. A file cycle is a strongly connected component of more than one file; a folder cycle
 * is one between the folders the files sit in (a file's folder is its directory, so `src/core` and
 * `src/core/config` are two folders; `src/` itself holds only the entry point `src/cli.ts`). The
 * test fails listing each cycle found, one path per line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { ROOT } from '../helpers/cli.ts';

const SRC = join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out.sort();
}

/** The relative module references of one file, resolved to files under `src/` (others dropped). */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  const out = new Set<string>();
  for (const ref of info.importedFiles) {
    const spec = ref.fileName;
    if (!spec.startsWith('.')) continue;
    const base = resolve(dirname(file), spec);
    const candidates = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
    const hit = candidates.find((c) => c.endsWith('.ts') && existsSync(c) && statSync(c).isFile());
    assert.ok(hit, `${relative(ROOT, file)}: cannot resolve import '${spec}'`);
    if (hit.startsWith(SRC)) out.add(hit);
  }
  return [...out].sort();
}

/** Tarjan's strongly connected components of more than one node (or with a self edge). */
function cycles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || graph.get(v)?.has(v)) out.push(comp.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return out.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** One closed path through a component, for the message: `a -> b -> … -> a`. */
function pathThrough(graph: Map<string, Set<string>>, comp: string[]): string {
  const inside = new Set(comp);
  const start = comp[0]!;
  // Breadth-first from start's successors back to start, inside the component.
  const prev = new Map<string, string>();
  const queue = [...(graph.get(start) ?? [])].filter((w) => inside.has(w)).sort();
  for (const w of queue) prev.set(w, start);
  while (queue.length > 0 && !prev.has(`${start}#`)) {
    const v = queue.shift()!;
    if (v === start) break;
    for (const w of [...(graph.get(v) ?? [])].sort()) {
      if (!inside.has(w) || prev.has(w)) continue;
      prev.set(w, v);
      queue.push(w);
    }
  }
  const path = [start];
  let v = prev.get(start);
  while (v !== undefined && v !== start) {
    path.push(v);
    v = prev.get(v);
  }
  path.push(start);
  return path.reverse().join(' -> ') + (comp.length > 2 ? `  (component: ${comp.join(', ')})` : '');
}

const files = sourceFiles(SRC);
const fileGraph = new Map<string, Set<string>>();
const folderGraph = new Map<string, Set<string>>();
for (const file of files) {
  const from = relative(ROOT, file);
  const targets = importsOf(file).map((t) => relative(ROOT, t));
  fileGraph.set(from, new Set(targets));
  const folder = dirname(from);
  if (!folderGraph.has(folder)) folderGraph.set(folder, new Set());
  for (const t of targets) if (dirname(t) !== folder) folderGraph.get(folder)!.add(dirname(t));
}

test('the scan sees the tree: every source file, type-only and dynamic imports included', () => {
  assert.ok(files.length > 100, `only ${files.length} files under src/`);
  const cli = fileGraph.get('src/cli.ts');
  assert.ok(cli && cli.size > 0, 'src/cli.ts imports nothing?');
  // The resolver sees `import type` and `import()`: checked on a sample written for it.
  const sample = ts.preProcessFile("import type { A } from './a.ts';\nconst b = await import('./b.ts');\nexport * from './c.ts';\n", true, true);
  assert.deepEqual(
    sample.importedFiles.map((f) => f.fileName),
    ['./a.ts', './b.ts', './c.ts'],
  );
});

test('no import cycle between files in src/', () => {
  assert.deepEqual(
    cycles(fileGraph).map((c) => pathThrough(fileGraph, c)),
    [],
    'file import cycles',
  );
});

test('no import cycle between folders in src/', () => {
  const found = cycles(folderGraph);
  assert.deepEqual(
    found.map((c) => pathThrough(folderGraph, c)),
    [],
    'folder import cycles',
  );
});
