/**
 * The image's Node compile cache, built with the image (issue #14): without it every Pod starts
 * with an empty cache (the emptyDir at /tmp), so Node strips the TypeScript types of every module
 * again, which loads its type stripper (a WebAssembly module) that stays resident: the speaker held
 * 98-108 MiB at 20 Services instead of 72. With the cache shipped, no module is stripped at start.
 * The image's daemons run their bundles (dist/speaker.cjs, dist/controller.cjs, image/layout.ts),
 * which need none; the cache serves the other commands, and the daemons started with
 * METALLB_TS_NO_BUNDLE=1.
 *
 * Node keys its cache by Node version, V8 flags and user id (one directory
 * `v<version>-<arch>-<flags hash>-<uid>` per combination) and, with NODE_COMPILE_CACHE_PORTABLE=1,
 * by the module's path relative to the cache directory: so the cache is built here, from a tree laid
 * out as APP_DIR is, once for each set of V8 flags bin/metallb-ts starts Node with (the daemons',
 * explain's, none), as root, and copied for each user a daemon runs as (deploy/: the speaker
 * root, the controller nobody; `kubectl exec` runs the other commands as the Pod's user). The image sets
 * NODE_COMPILE_CACHE to it (image/layout.ts); the root file system being read-only, Node only reads it.
 *
 *   node image/compile-cache.ts APP_DIR    (the Dockerfile's build stage: writes APP_DIR/.compile-cache)
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The cache directory inside APP_DIR (relative), where the image's NODE_COMPILE_CACHE points. */
export const COMPILE_CACHE_DIR = '.compile-cache';

/** The user each daemon runs as in deploy/ (speaker.yaml: root; controller.yaml: runAsUser 65534). */
export const DAEMON_UIDS = { speaker: 0, controller: 65534 } as const;
export type Daemon = keyof typeof DAEMON_UIDS;

/**
 * The V8 flags bin/metallb-ts gives each daemon (its `speaker) exec "$node" FLAGS "$entry"` lines,
 * `$entry` being src/cli.ts or the bundle in dist/: the image's daemons run their bundle, and
 * src/cli.ts with METALLB_TS_NO_BUNDLE=1, which this cache is for; or
 * "$root/src/cli.ts"). Throws when a daemon's line is not found: the cache would then be built for other flags
 * than the daemon runs with, and never used.
 */
export function daemonNodeFlags(binText: string): Record<Daemon, string[]> {
  const out = {} as Record<Daemon, string[]>;
  for (const d of Object.keys(DAEMON_UIDS) as Daemon[]) {
    const m = new RegExp(`^\\s*(?:[a-z |]*\\|\\s*)?${d}(?:\\s*\\|[a-z |]*)?\\)\\s*exec "\\$node" (.*?)\\s*"\\$(?:root/src/cli\\.ts|entry)"`, 'm').exec(binText);
    if (!m) throw new Error(`bin/metallb-ts: no \`${d}) exec "$node" ... "$root/src/cli.ts"\` line to read the ${d}'s V8 flags from`);
    out[d] = m[1]!.split(/\s+/).filter(Boolean);
  }
  return out;
}

/**
 * Every distinct set of V8 flags bin/metallb-ts starts Node with (its `exec "$node" ...
 * "$root/src/cli.ts"` lines and its `exec "$node" ... "$entry"` lines, src/cli.ts or the bundle in
 * dist/ (the image ships the daemons' only): the daemons', explain's, none for the other commands), in order.
 */
export function nodeFlagSets(binText: string): string[][] {
  const seen = new Map<string, string[]>();
  for (const m of binText.matchAll(/exec "\$node" (.*?)\s*"\$(?:root\/src\/cli\.ts|entry)"/g)) {
    const flags = m[1]!.split(/\s+/).filter(Boolean);
    seen.set(flags.join(' '), flags);
  }
  return [...seen.values()];
}

/** Every .ts file below `dir` (absolute paths, sorted). */
function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (lstatSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Modes the daemons' users can read: files 0644, directories 0755 (the image's files belong to root). */
function makeReadable(dir: string): void {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (lstatSync(p).isDirectory()) makeReadable(p);
    else chmodSync(p, 0o644);
  }
  chmodSync(dir, 0o755);
}

/**
 * One warm-up: `script` run by `node` with `flags`, in a cache of its own, whose directory goes into
 * `cache` when it holds the stripped code of `modules` modules. Returns that directory's name and
 * the file names of the stripped TypeScript Node wrote (V8's
 * code caches are left out: they differ from build to build, and the image would no longer be
 * reproducible; the stripped code is what spares the type stripper). Throws when the run fails.
 */
function warmUp(node: string, flags: string[], app: string, cache: string, script: string, modules: number): { dir: string; stripped: Set<string> } {
  // its own cache beside `cache` (the same relative paths): flags V8 does not hash (heap sizes)
  // give the directory of another set, which would then look written by nobody
  const own = `${cache}-warm`;
  rmSync(own, { recursive: true, force: true });
  mkdirSync(own);
  // Node's debug lines into a file: into a pipe (non-blocking in the child), lines are lost when
  // the reader is slow, and the stripped entries they name would be taken for code caches.
  const logDir = mkdtempSync(join(tmpdir(), 'metallb-ts-compile-cache-'));
  const logFile = join(logDir, 'stderr');
  const fd = openSync(logFile, 'w');
  let stderr: string;
  let r: ReturnType<typeof spawnSync>;
  try {
    r = spawnSync(node, [...flags, '--input-type=module', '-e', script], {
      cwd: app,
      stdio: ['ignore', 'ignore', fd],
      env: { PATH: process.env.PATH, NODE_COMPILE_CACHE: own, NODE_COMPILE_CACHE_PORTABLE: '1', NODE_DEBUG_NATIVE: 'COMPILE_CACHE' },
    });
  } finally {
    closeSync(fd);
    stderr = readFileSync(logFile, 'utf8');
    rmSync(logDir, { recursive: true, force: true });
  }
  if (r.status !== 0) throw new Error(`compile cache: a warm-up (${flags.join(' ') || 'no flags'}) failed (${r.error?.message ?? stderr.trim().split('\n').slice(-3).join(' ')})`);
  const made = readdirSync(own);
  if (made.length !== 1) throw new Error(`compile cache: Node wrote ${made.length ? made.join(', ') : 'nothing'} in ${own} (${flags.join(' ') || 'no flags'})`);
  const stripped = new Set([...stderr.matchAll(/writing cache for StrippedTypeScript \S+ to temporary file \S*\/([0-9a-f]+)\.\S+ .*success/g)].map((m) => m[1]!));
  const dir = made[0]!;
  for (const name of readdirSync(join(own, dir))) if (!stripped.has(name)) rmSync(join(own, dir, name));
  // a set of flags V8 hashes as an earlier one's: the same directory, the same entries
  if (stripped.size >= modules && !existsSync(join(cache, dir))) cpSync(join(own, dir), join(cache, dir), { recursive: true });
  rmSync(own, { recursive: true, force: true });
  return { dir, stripped };
}

/**
 * Builds `app`/.compile-cache with `node` (the Node the image runs: the same version), one
 * directory per set of flags and user: a process with those V8 flags imports every module of `app`/src and
 * runs `cli.ts --version`, then exits (Node writes its cache at exit). Returns the cache directory.
 * Throws when a warm-up fails or Node writes no cache.
 */
export function buildCompileCache(o: { node: string; app: string; log?: (line: string) => void }): string {
  const app = resolve(o.app);
  const cache = join(app, COMPILE_CACHE_DIR);
  rmSync(cache, { recursive: true, force: true });
  mkdirSync(cache, { recursive: true });
  const bin = readFileSync(join(app, 'bin/metallb-ts'), 'utf8');
  daemonNodeFlags(bin); // throws when a daemon's line is not found: its flags would be missed
  const cli = join(app, 'src/cli.ts');
  const modules = tsFiles(join(app, 'src'))
    .filter((f) => f !== cli)
    .map((f) => pathToFileURL(f).href);
  const script = `for (const m of ${JSON.stringify(modules)}) await import(m);
process.argv = [process.argv[0], ${JSON.stringify(cli)}, '--version'];
await import(${JSON.stringify(pathToFileURL(cli).href)});`;
  const uid = process.getuid?.() ?? 0;
  // As root, one directory per set of flags V8 tells apart,
  const byFlags = new Map<string, string>();
  for (const f of nodeFlagSets(bin)) {
    const what = f.join(' ') || 'no flags';
    for (let attempt = 1; ; attempt++) {
      const r = warmUp(o.node, f, app, cache, script, modules.length + 1);
      if (!r.dir.endsWith(`-${uid}`)) throw new Error(`compile cache: Node wrote ${r.dir} (${what}) in ${cache}, not a directory for user ${uid}`);
      if (r.stripped.size > modules.length) {
        byFlags.set(f.join(' '), r.dir);
        o.log?.(`compile cache: ${what}: ${r.dir}, ${r.stripped.size} modules`);
        break;
      }
      // should not happen (the debug lines go to a file); the output is the same at every run
      if (attempt === 3) throw new Error(`compile cache: Node wrote the stripped code of ${r.stripped.size} modules (${what}), not of all ${modules.length + 1}`);
    }
  }
  // and each for every user of DAEMON_UIDS (`kubectl exec` runs as the Pod's user: explain as nobody in the controller's)
  for (const dir of new Set(byFlags.values())) {
    for (const uid of new Set(Object.values(DAEMON_UIDS))) {
      const name = dir.replace(/-\d+$/, `-${uid}`);
      if (!existsSync(join(cache, name))) cpSync(join(cache, dir), join(cache, name), { recursive: true });
    }
  }
  o.log?.(`compile cache: ${readdirSync(cache).sort().join(', ')}`);
  makeReadable(cache);
  return cache;
}

if (import.meta.main) {
  const app = process.argv[2];
  if (!app) {
    process.stderr.write('usage: node image/compile-cache.ts APP_DIR\n');
    process.exit(2);
  }
  try {
    buildCompileCache({ node: process.execPath, app, log: (l) => process.stderr.write(`${l}\n`) });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  }
}
