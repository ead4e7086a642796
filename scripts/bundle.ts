/**
 * Bundles src/ and the runtime dependencies it imports into one script, dist/cli.cjs, with esbuild
 * (devDependency, pinned), and writes its starter, dist/metallb-ts.cjs: bin/metallb-ts runs the
 * starter instead of src/cli.ts when it is there and no file under src/ is newer (issue #12 item
 * 11). The program then starts from one script instead of about 84 ES modules, which Node's ESM
 * loader resolved, read, compiled and linked one by one: about 100 ms of explain's 230 ms on
 * examples/cluster.yaml.
 * Each daemon gets a bundle of its own, dist/speaker.cjs and dist/controller.cjs (src/daemon-cli.ts
 * built for that daemon only: no diagnostics command, not the other daemon), with its starter
 * dist/metallb-ts-speaker.cjs or dist/metallb-ts-controller.cjs, which bin/metallb-ts runs for it
 * under the same rule (issue #14). Their whitespace and syntax are minified (names kept: a crash's
 * stack still names its functions): V8 keeps a script's whole source in the heap for as long as it
 * runs, 1.3 MB for cli.cjs, 0.33 MB for controller.cjs, 0.45 MB for speaker.cjs (one bundle for
 * both daemons was 0.6 MB: the controller at 20 Services 0.7 MiB more resident).
 *
 *   node scripts/bundle.ts                 (npm run build; exit 1 when the build fails)
 *   node scripts/bundle.ts --if-available  (npm's prepare: exit 0, one line, when esbuild or src/
 *                                           is not installed, as in `npm ci --omit=dev`, and when
 *                                           the build fails: bin/metallb-ts then runs src/)
 *
 * What the bundle keeps of the source layout:
 * - Lazy loading. Modules the program imports dynamically (each command, the daemons) stay behind
 *   esbuild's lazy initialisers, and Node's built-in modules are taken with
 *   process.getBuiltinModule when the module that imports them first runs, not at the top of the
 *   bundle: otherwise explain would load node:tls, node:https, undici and node:crypto it never uses
 *   (about 120 ms).
 * - Run-time paths. src/runtime/package-root.ts finds the package root from the running module
 *   (the nearest directory with a package.json: dist/ must have none); packages loaded with
 *   createRequire(import.meta.url) (client-node, chalk, yaml, js-yaml, cli-table3) are resolved
 *   from dist/ as from src/ and loaded from node_modules when used, as before. The source is strict
 *   code, as ES modules are.
 * - Freshness. The bundle's modification time is set to when the build started reading src/: a
 *   file saved during the build is newer than the bundle, so bin/metallb-ts does not run it. Both
 *   files are written under temporary names and renamed, the starter last (bin/metallb-ts looks for
 *   it): a half-written bundle is never run. A failed build removes the old one.
 *
 * Why a script and a starter rather than an ES module: V8 compiles a function when it is first
 * called, and Node's compile cache holds only what was compiled before the module ran (the top
 * level), so each run would compile again the few hundred functions explain calls (about 30 ms of
 * CPU). The starter compiles the bundle with vm.Script and, when it had no usable cache, writes
 * V8's code cache as the process exits, functions called included, next to Node's compile cache
 * (NODE_COMPILE_CACHE/metallb-ts-bundle/, one file per tree, build, Node version, V8 flags, user
 * and command; the files of the same tree's previous builds are removed then). An unwritable cache directory (the image's
 * read-only one) only means no cache; V8 rejects a cache made for other flags or another V8, and the
 * starter then writes a new one.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { basename, join } from 'node:path';
import { DAEMONS, type Daemon } from '../src/commands/frame.ts';

/** The package root (this file is scripts/bundle.ts). */
const ROOT = join(import.meta.dirname, '..');

/** The bundle (bin/metallb-ts does not run it directly: see STARTER). */
export const BUNDLE = join(ROOT, 'dist/cli.cjs');

/** What bin/metallb-ts runs (keep in step with its `bundle=` line). */
export const STARTER = join(ROOT, 'dist/metallb-ts.cjs');

/** The daemons (commands/frame.ts), each with a bundle of its own (src/daemon-cli.ts built with METALLB_TS_DAEMON set to it). */
export { DAEMONS, type Daemon };

/** The bundle of `daemon` in `dist` (default the repository's dist/): dist/speaker.cjs, dist/controller.cjs. */
export function daemonBundle(daemon: Daemon, dist = join(ROOT, 'dist')): string {
  return join(dist, `${daemon}.cjs`);
}

/** The starter of `daemon`'s bundle, which bin/metallb-ts runs (keep in step with its `bundle=` lines). */
export function daemonStarter(daemon: Daemon, dist = join(ROOT, 'dist')): string {
  return join(dist, `metallb-ts-${daemon}.cjs`);
}

/** The daemons' bundles and starters, as names in dist/ (what the container image ships). */
export const DAEMON_DIST_FILES: readonly string[] = DAEMONS.flatMap((d) => [basename(daemonBundle(d)), basename(daemonStarter(d))]);

const BUILTINS = new Set(builtinModules.filter((m) => !m.startsWith('_')));

/** True when `spec` names a built-in module of Node (`node:fs`, `fs`, `fs/promises`). */
export function isBuiltin(spec: string): boolean {
  return spec.startsWith('node:') || BUILTINS.has(spec);
}

/**
 * Built-in modules a bundled CommonJS package require()s when it loads but uses only in a path the
 * program rarely takes: commander's node:child_process (it spawns executable subcommands, which
 * metallb-ts has none of) loads ten more of Node's modules on every start (net, dgram, ...).
 */
const LAZY_ON_REQUIRE = new Set(['node:child_process']);

/** A module whose exports load the built-in module `name` on first use (a Proxy onto it). */
export function lazyBuiltin(name: string): string {
  return `let loaded;
const real = () => (loaded ??= process.getBuiltinModule(${JSON.stringify(name)}));
module.exports = new Proxy({}, {
  get: (_, key) => real()[key],
  set: (_, key, value) => ((real()[key] = value), true),
  has: (_, key) => key in real(),
  ownKeys: () => Reflect.ownKeys(real()),
  getOwnPropertyDescriptor: (_, key) => {
    const d = Reflect.getOwnPropertyDescriptor(real(), key);
    return d && { ...d, configurable: true };
  },
});
`;
}

/**
 * `js` with every character beyond ASCII written as a `\uXXXX` escape (two for one beyond the BMP):
 * the same program wherever such a character can stand in esbuild's output (comments, string,
 * template and regular-expression literals, identifiers).
 */
export function asciiOnly(js: string): string {
  return js.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * The starter's source for the bundle `bundleName` (a file in the starter's directory) whose build
 * id is `buildId` (a hex digest of the bundle: the cache files of other builds are never read, and
 * are removed when a new one is written; those of the other bundle are kept).
 */
export function starterSource(buildId: string, bundleName = 'cli.cjs'): string {
  return `'use strict';
// Written by scripts/bundle.ts: runs ${bundleName} (a bundle of src/) with V8's code cache of its last
// run (see there). Everything that can fail about the cache only means no cache.
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const BUILD_ID = '${buildId}';
const file = path.join(__dirname, ${JSON.stringify(bundleName)});
// Gives a Buffer's memory back now rather than at a later collection, when the Buffer owns its
// ArrayBuffer (never a slice of Node's pool, which other Buffers share): the bundle's bytes and its
// code cache (0.6 MB each for the daemons) would otherwise still be held while the program starts,
// and count in its peak (issue #14).
const release = (buf) => {
  if (buf && buf.byteOffset === 0 && buf.buffer.byteLength === buf.byteLength && buf.byteLength >= Buffer.poolSize) buf.buffer.transfer(0);
};
const bytes = fs.readFileSync(file);
// ASCII (the build escapes the rest): a one-byte string, copied rather than decoded as UTF-8.
const source = require('node:buffer').isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
release(bytes);
let dir;
let tree;
let cacheFile;
let cachedData;
if (process.env.NODE_COMPILE_CACHE && !process.env.NODE_DISABLE_COMPILE_CACHE) {
  // FNV-1a: this bundle of this tree (another checkout keeps its own files) and the V8 flags
  const fnv = (text) => {
    let h = 0x811c9dc5;
    for (const c of text) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
    return h.toString(16);
  };
  tree = fnv(file);
  const command = /^[a-z][a-z-]{0,31}$/.test(process.argv[2] ?? '') ? process.argv[2] : '-';
  dir = path.join(process.env.NODE_COMPILE_CACHE, 'metallb-ts-bundle');
  cacheFile = path.join(dir, \`\${tree}-\${BUILD_ID}-\${process.version}-\${process.arch}-\${fnv(process.execArgv.join(' '))}-\${process.getuid?.() ?? 0}-\${command}\`);
  try {
    cachedData = fs.readFileSync(cacheFile);
  } catch {}
}
// The bundle is a function expression (its build wraps it): compiled from this very string.
const script = new vm.Script(source, {
  filename: file,
  cachedData,
  importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});
if (cacheFile && (cachedData === undefined || script.cachedDataRejected)) {
  process.once('exit', () => {
    try {
      fs.mkdirSync(dir, { recursive: true });
      for (const name of fs.readdirSync(dir)) if (name.startsWith(\`\${tree}-\`) && !name.startsWith(\`\${tree}-\${BUILD_ID}-\`)) fs.rmSync(path.join(dir, name), { force: true });
      const tmp = \`\${cacheFile}.\${process.pid}\`;
      fs.writeFileSync(tmp, script.createCachedData(), { mode: 0o600 });
      fs.renameSync(tmp, cacheFile);
    } catch {}
  });
}
release(cachedData);
cachedData = undefined;
const mod = { exports: {} };
script.runInThisContext()(mod.exports, require('node:module').createRequire(file), mod, file, __dirname);
`;
}

/**
 * The esbuild options of one bundle: `entry` (under `root`/src/) into `outfile`. Paths esbuild
 * writes are relative to `root`: the same tree gives the same bytes wherever it is (image/build.ts).
 */
function buildOptions(entry: string, outfile: string, minify: boolean, root = ROOT, quiet = false, define: Record<string, string> = {}): import('esbuild').BuildOptions {
  return {
    entryPoints: [join(root, entry)],
    absWorkingDir: root,
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    minifyWhitespace: minify,
    minifySyntax: minify,
    logLevel: quiet ? 'silent' : 'warning',
    legalComments: 'eof',
    // The bundle is one function expression, which the starter compiles as it is (not wrapped in a
    // copy of the source: 0.6 MB less for the daemons, at their start) and calls with a require()
    // and its file name; import.meta.url is its URL.
    banner: { js: "(function (exports, require, module, __filename, __dirname) {'use strict';\nconst __metallbTsUrl = require('node:url').pathToFileURL(__filename).href;" },
    footer: { js: '\n})' },
    define: { 'import.meta.url': '__metallbTsUrl', ...define },
    plugins: [
      {
        name: 'lazy-node-builtins',
        setup(build) {
          build.onResolve({ filter: /^[a-z0-9_:/]+$/ }, (args) => {
            if (!isBuiltin(args.path)) return undefined;
            const path = args.path.replace(/^(?!node:)/, 'node:');
            return { path, namespace: args.kind === 'require-call' && LAZY_ON_REQUIRE.has(path) ? 'node-builtin-lazy' : 'node-builtin' };
          });
          // prom-client's process_cpu_* collector require()s the OpenTelemetry API when it loads
          // and uses it only for exemplars, which metallb-ts never enables: 42 kB of source and its
          // globals in every bundle, for nothing. An empty module instead (src/cli.ts, run from src/,
          // still loads the real one).
          build.onResolve({ filter: /^@opentelemetry\/api$/ }, () => ({ path: '@opentelemetry/api', namespace: 'no-exemplars' }));
          build.onLoad({ filter: /.*/, namespace: 'no-exemplars' }, () => ({ contents: 'module.exports = {};', loader: 'js' }));
          build.onLoad({ filter: /.*/, namespace: 'node-builtin' }, (args) => ({ contents: `module.exports = process.getBuiltinModule(${JSON.stringify(args.path)});`, loader: 'js' }));
          build.onLoad({ filter: /.*/, namespace: 'node-builtin-lazy' }, (args) => ({ contents: lazyBuiltin(args.path), loader: 'js' }));
        },
      },
    ],
  };
}

/**
 * Builds dist/cli.cjs, dist/speaker.cjs, dist/controller.cjs and their starters dist/metallb-ts.cjs,
 * dist/metallb-ts-speaker.cjs and dist/metallb-ts-controller.cjs. Resolves when all are written;
 * rejects with esbuild's error (its messages are already printed) when src/ does not build, and
 * then leaves none of them.
 * With `o.root` and `o.dist`: from `o.root`/src/ into `o.dist` (image/build.ts: the tree it packages,
 * into its staging directory); with `o.daemonOnly`, the daemons' bundles and starters only; with
 * `o.quiet`, esbuild prints nothing (the caller reports the error it rejects with).
 */
export async function bundle(o: { root?: string; dist?: string; daemonOnly?: boolean; quiet?: boolean } = {}): Promise<void> {
  const esbuild = await import('esbuild');
  const started = new Date();
  const root = o.root ?? ROOT;
  const dist = o.dist ?? join(ROOT, 'dist');
  mkdirSync(dist, { recursive: true });
  const bundles = [
    ...(o.daemonOnly ? [] : [{ entry: 'src/cli.ts', out: join(dist, basename(BUNDLE)), starter: join(dist, basename(STARTER)), minify: false, define: {} }]),
    ...DAEMONS.map((d) => ({ entry: 'src/daemon-cli.ts', out: daemonBundle(d, dist), starter: daemonStarter(d, dist), minify: true, define: { METALLB_TS_DAEMON: JSON.stringify(d) } })),
  ].map((b) => ({ ...b, tmp: `${b.out}.${process.pid}.tmp`, starterTmp: `${b.starter}.${process.pid}.tmp` }));
  try {
    await Promise.all(bundles.map((b) => esbuild.build(buildOptions(b.entry, b.tmp, b.minify, root, o.quiet, b.define))));
    for (const b of bundles) {
      // The few characters beyond ASCII esbuild leaves (in comments, one regex) as \u escapes: the
      // starter then reads the bundle as a one-byte string instead of decoding 1.3 MB of UTF-8.
      writeFileSync(b.tmp, asciiOnly(readFileSync(b.tmp, 'utf8')));
      const buildId = createHash('sha256').update(readFileSync(b.tmp)).digest('hex').slice(0, 16);
      writeFileSync(b.starterTmp, starterSource(buildId, basename(b.out)));
      utimesSync(b.tmp, started, started);
      utimesSync(b.starterTmp, started, started);
    }
    for (const b of bundles) rmSync(b.starter, { force: true });
    for (const b of bundles) renameSync(b.tmp, b.out);
    for (const b of bundles) renameSync(b.starterTmp, b.starter);
  } catch (err) {
    for (const b of bundles) for (const f of [b.tmp, b.starterTmp, b.starter, b.out]) rmSync(f, { force: true });
    throw err;
  }
}

if (import.meta.main) {
  const ifAvailable = process.argv.includes('--if-available');
  if (ifAvailable && !existsSync(join(ROOT, 'src/cli.ts'))) {
    console.log('metallb-ts: no src/ to bundle; bin/metallb-ts runs src/cli.ts once it is there');
  } else if (ifAvailable && !existsSync(join(ROOT, 'node_modules/esbuild/package.json'))) {
    console.log('metallb-ts: esbuild is not installed (a devDependency): no bundle; bin/metallb-ts runs src/cli.ts');
  } else {
    try {
      await bundle();
    } catch (err) {
      if (!(err instanceof Error && 'errors' in err)) console.error(err);
      console.error('metallb-ts: the bundles (dist/cli.cjs, dist/speaker.cjs, dist/controller.cjs) were not built; bin/metallb-ts runs src/cli.ts');
      // npm ci goes on (the bundle only makes starts faster); npm run build fails.
      process.exitCode = ifAvailable ? 0 : 1;
    }
  }
}
