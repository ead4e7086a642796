/**
 * What the image leaves out of the production node_modules: files Node never loads at run time.
 * Used by image/build.ts (as a filter while it writes the dependencies layer) and by the
 * Dockerfile (`node image/prune.ts node_modules`, which deletes them), so both images hold the
 * same files. Every rule is a kind of file no `require`/`import` reaches:
 *
 * - type declarations (`.d.ts`, `.d.mts`, `.d.cts`) and source maps (`.js.map`, `.d.ts.map`, …):
 *   for the TypeScript compiler and debuggers (Node reads a map only with --enable-source-maps);
 * - documentation (`*.md`, a package's top-level `docs/`, `example(s)/`), tests (top-level
 *   `test/`, `tests/`, `__tests__/`, `benchmark(s)/`, `coverage/`), the packages' tooling
 *   configuration (`.eslintrc`, `.nycrc`, `.travis.yml`, `tsconfig.json`, `.github/`, …);
 * - the Bare runtime's prebuilt addons (`*.bare`) and their C sources of bare-fs, bare-url, … —
 *   tar-fs and tar-stream map `fs` to bare-fs only under the `bare` import condition; Node takes
 *   `default` (node:fs) and cannot load a `.bare` addon at all;
 * - npm's own bookkeeping: every `node_modules/.bin` (the image runs no package binaries) and
 *   `node_modules/.package-lock.json`.
 *
 * License files are always kept, whatever their extension. A file that a package.json names as an
 * entry point (`main`, `bin`, or a non-`types` target of `exports`/`imports`), and a directory
 * holding one, is kept even when a rule matches it (none does today; this keeps a future package
 * from being cut off silently).
 */
import { lstatSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Why a path is left out, or null when it stays. `rel` is relative to node_modules, '/'-separated. */
export function pruneReason(rel: string, isDir: boolean): string | null {
  const parts = rel.split('/');
  const base = parts[parts.length - 1]!;
  if ((base === '.bin' && (rel === '.bin' || rel.endsWith('/node_modules/.bin'))) || rel === '.package-lock.json') return 'npm bookkeeping';
  if (/^(licen[cs]e|copying|notice)/i.test(base)) return null;
  if (isDir) {
    // Only a package's own top-level directory: `yaml/dist/doc` is code, `test` deep inside may be.
    if (!isPackageRoot(parts.slice(0, -1))) return null;
    if (/^(test|tests|__tests__|benchmarks?|coverage)$/.test(base)) return 'tests';
    if (/^(docs|examples?)$/.test(base)) return 'documentation';
    if (base === '.github') return 'tooling';
    return null;
  }
  if (/\.d\.[mc]?ts$/.test(base)) return 'type declarations';
  if (/\.[mc]?[jt]s\.map$/.test(base)) return 'source maps';
  if (/\.(md|markdown)$/i.test(base)) return 'documentation';
  if (/\.bare$/.test(base)) return 'Bare runtime addons';
  if (/\.(c|h|cc|cpp)$/.test(base) || base === 'CMakeLists.txt') return 'C sources';
  if (/^(\.eslintrc.*|\.eslintignore|\.nycrc.*|\.travis\.yml|\.codeclimate\.yml|\.npmignore|\.nvmrc|\.mailmap|\.prettierrc.*|\.editorconfig|\.jshintrc|\.gitattributes|tsconfig(\..*)?\.json)$/.test(base))
    return 'tooling';
  return null;
}

/** `parts` (relative to node_modules) is a package's directory: `name`, `@scope/name`, `a/node_modules/b`. */
function isPackageRoot(parts: string[]): boolean {
  const n = parts.length;
  if (n === 0) return false;
  if (parts[n - 1]!.startsWith('@') || parts[n - 1] === 'node_modules') return false;
  const before = n >= 2 && parts[n - 2]!.startsWith('@') ? n - 2 : n - 1;
  return before === 0 || parts[before - 1] === 'node_modules';
}

/** One path of the tree, relative to node_modules. */
export interface TreeEntry {
  rel: string;
  type: 'dir' | 'file' | 'symlink';
  size: number;
  mode: number;
}

export interface PruneResult {
  kept: TreeEntry[];
  /** What was left out, each with its reason; a left-out directory counts every file below it. */
  dropped: { rel: string; reason: string; bytes: number }[];
}

/** Walks `dir` (a node_modules) and splits it into what stays and what goes, sorted by path. */
export function pruneTree(dir: string, prune = true): PruneResult {
  const kept: TreeEntry[] = [];
  const dropped: PruneResult['dropped'] = [];
  const protectedFiles = prune ? entryPoints(dir) : new Set<string>();
  const walk = (rel: string): void => {
    for (const name of readdirSync(rel ? join(dir, rel) : dir).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, r));
      const type = st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : st.isFile() ? 'file' : null;
      if (!type) throw new Error(`${join(dir, r)}: neither a file, a directory nor a symlink`);
      const guarded = protectedFiles.has(r) || (type === 'dir' && [...protectedFiles].some((f) => f.startsWith(`${r}/`)));
      const reason = prune && !guarded ? pruneReason(r, type === 'dir') : null;
      if (reason) {
        dropped.push({ rel: r, reason, bytes: type === 'dir' ? treeBytes(join(dir, r)) : type === 'file' ? st.size : 0 });
        continue;
      }
      kept.push({ rel: r, type, size: type === 'file' ? st.size : 0, mode: st.mode & 0o7777 });
      if (type === 'dir') walk(r);
    }
  };
  walk('');
  return { kept, dropped };
}

/** The bytes of the regular files below `dir`. */
function treeBytes(dir: string): number {
  let n = 0;
  for (const name of readdirSync(dir)) {
    const st = lstatSync(join(dir, name));
    n += st.isDirectory() ? treeBytes(join(dir, name)) : st.isFile() ? st.size : 0;
  }
  return n;
}

/**
 * The files (relative to node_modules) that some package.json names as code to run: `main` (with
 * Node's `.js`, `.json`, `/index.js` completions), `bin`, and every target of `exports` and
 * `imports` outside a `types` condition.
 */
export function entryPoints(dir: string): Set<string> {
  const out = new Set<string>();
  const visit = (pkgRel: string): void => {
    const pkgDir = pkgRel ? join(dir, pkgRel) : dir;
    let pkg: Record<string, unknown> | null = null;
    try {
      pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as Record<string, unknown>;
    } catch {
      pkg = null;
    }
    if (pkg && pkgRel) {
      const add = (target: string): void => {
        const t = target.replace(/^\.\//, '').replace(/\/$/, '');
        for (const c of [t, `${t}.js`, `${t}.json`, `${t}/index.js`]) out.add(`${pkgRel}/${c}`);
      };
      add(typeof pkg.main === 'string' ? pkg.main : 'index.js');
      if (typeof pkg.bin === 'string') add(pkg.bin);
      else if (pkg.bin && typeof pkg.bin === 'object') for (const v of Object.values(pkg.bin)) if (typeof v === 'string') add(v);
      const targets = (v: unknown, key: string): void => {
        if (key === 'types' || key === 'typings') return;
        if (typeof v === 'string') {
          if (!v.includes('*')) add(v);
          return;
        }
        if (Array.isArray(v)) {
          for (const x of v) targets(x, '');
          return;
        }
        if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) targets(x, k);
      };
      targets(pkg.exports, '');
      targets(pkg.imports, '');
    }
    // Nested packages: every directory of node_modules below this one.
    const nm = pkgRel ? join(pkgDir, 'node_modules') : dir;
    let names: string[] = [];
    try {
      names = statSync(nm).isDirectory() ? readdirSync(nm) : [];
    } catch {
      names = [];
    }
    const prefix = pkgRel ? `${pkgRel}/node_modules/` : '';
    for (const name of names) {
      if (name.startsWith('.')) continue;
      if (name.startsWith('@')) {
        for (const sub of readdirSync(join(nm, name))) visit(`${prefix}${name}/${sub}`);
      } else {
        visit(`${prefix}${name}`);
      }
    }
  };
  visit('');
  return out;
}

/** Bytes per reason, biggest first. */
export function droppedByReason(dropped: PruneResult['dropped']): [reason: string, bytes: number][] {
  const m = new Map<string, number>();
  for (const d of dropped) m.set(d.reason, (m.get(d.reason) ?? 0) + d.bytes);
  return [...m].sort((a, b) => b[1] - a[1]);
}

// `node image/prune.ts DIR`: deletes what the image leaves out of the node_modules DIR (the Dockerfile).
if (import.meta.main) {
  const dir = process.argv[2];
  if (!dir || process.argv.length > 3) {
    process.stderr.write('usage: node image/prune.ts NODE_MODULES_DIR\n');
    process.exit(2);
  }
  const { dropped } = pruneTree(dir);
  for (const d of dropped) rmSync(join(dir, d.rel), { recursive: true, force: true });
  const total = dropped.reduce((n, d) => n + d.bytes, 0);
  process.stdout.write(
    `image/prune.ts: removed ${dropped.length} paths, ${(total / 1e6).toFixed(1)} MB from ${dir} (${droppedByReason(dropped)
      .map(([r, b]) => `${r} ${(b / 1e6).toFixed(1)} MB`)
      .join(', ')})\n`,
  );
}
