/**
 * `npm run image`: builds the metallb-ts container image without Docker, as an OCI archive that
 * `ctr -n k8s.io images import` (containerd 1.6+), `docker load` (25+), podman and skopeo read.
 * The layout is the Dockerfile's (image/layout.ts); the test/unit/image-dockerfile test holds
 * both to it.
 *
 * Layers, least to most often changed:
 *   1. base  — this machine's Debian files Node needs (loader, glibc, libstdc++, libgcc_s), /bin/sh,
 *              readlink, /etc/passwd with nobody (image/base.ts);
 *   2. node  — Node 24 from the pinned devDependency node@24 (node_modules/node), stripped of its
 *              debug symbols (--no-strip keeps them);
 *   3. deps  — `npm ci --omit=dev` of package.json + package-lock.json in a staging directory,
 *              less what Node never loads (image/prune.ts; --no-prune keeps all), and the addon
 *              native/build/l2.node;
 *   4. app   — package.json, package-lock.json, bin/, src/, the daemons' bundles dist/speaker.cjs
 *              and dist/controller.cjs with their starters dist/metallb-ts-speaker.cjs and
 *              dist/metallb-ts-controller.cjs (scripts/bundle.ts, built here from the src/ being
 *              packaged: what the speaker and the controller run), and .compile-cache:
 *              Node's compile cache of src/ for each set of V8 flags and user (image/compile-cache.ts),
 *              so that no command strips TypeScript types at start (the stripper stays resident:
 *              ~30 MiB more).
 * The daemons' bundles are built rather than taken from the tree's dist/: dist/ is a build product
 * that may be missing or older than src/ (an edit since `npm run build`), the bundle is
 * deterministic and takes about a second (esbuild, a devDependency, as node@24 is), and the
 * tree is not written to. Its V8 code cache is not built: it holds what a run compiled, which
 * differs from run to run (the image would no longer be reproducible); the starter finds the
 * image's cache directory read-only, which only means no code cache.
 * Reproducible: entries sorted, uid/gid 0, one mtime (SOURCE_DATE_EPOCH, else 0), normalized
 * modes, gzip without a timestamp, canonical JSON: the same tree gives the same manifest digest.
 * Cached under .cache/image: the production install (per package.json and lock), the stripped
 * Node (per binary), and each compressed layer (per uncompressed digest).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { baseEntries, debianPackages, normalMode } from './base.ts';
import { APP_DIR, APP_PATHS, CMD, ENTRYPOINT, ENV, NODE_PATH, USER, imageName } from './layout.ts';
import { type ImageConfig, type Layer, writeArchive, writeLayer } from './oci.ts';
import { droppedByReason, pruneTree, type PruneResult } from './prune.ts';
import { buildCompileCache, COMPILE_CACHE_DIR } from './compile-cache.ts';
import type { TarEntry } from './tar.ts';
import { DAEMON_DIST_FILES } from '../scripts/bundle.ts';

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');

export interface BuildOptions {
  /** The project to package (bin/, src/, package.json, package-lock.json, native/build/l2.node, node_modules/node). */
  root: string;
  /** The archive to write. */
  out: string;
  /** Where the production install, the stripped Node and the compressed layers are kept. */
  cacheDir: string;
  /** Strip Node's debug symbols (default on). */
  strip: boolean;
  /** Leave out what Node never loads from node_modules (default on). */
  prune: boolean;
  /** gzip level of the layers, 1–9. */
  gzipLevel: number;
  /** Reuse compressed layers from the cache (keyed by their uncompressed digest); off: compress every layer again. */
  layerCache: boolean;
  /** The tar mtime and the config's `created` (seconds); SOURCE_DATE_EPOCH, else 0 and no `created`. */
  sourceDateEpoch: number | null;
  /** Progress lines (stderr). */
  log: (line: string) => void;
}

/** A build error the CLI prints as one line (exit 2): something to fix on the machine or in the tree. */
export class ImageBuildError extends Error {}

export interface PackageSize {
  name: string;
  bytes: number;
}

export interface BuildResult {
  archive: string;
  name: string;
  manifestDigest: string;
  configDigest: string;
  archiveSize: number;
  architecture: string;
  layers: Omit<Layer, 'path'>[];
  node: { version: string; source: string; bytes: number; strippedBytes: number | null };
  nodeModules: {
    installedBytes: number;
    imageBytes: number;
    droppedByReason: [string, number][];
    /** The 10 biggest packages in the image (own files only). */
    biggest: PackageSize[];
    /** Each runtime dependency of package.json with everything it pulls in (shared packages count in each). */
    dependencies: PackageSize[];
  };
  baseFiles: string[];
  debianPackages: string[];
  timingsMs: Record<string, number>;
}

const MB = (n: number): string => `${(n / 1e6).toFixed(1)} MB`;

/** Runs `fn`, recording its wall time under `name`. */
async function timed<T>(timings: Record<string, number>, name: string, fn: () => T | Promise<T>): Promise<T> {
  const t0 = performance.now();
  try {
    return await fn();
  } finally {
    timings[name] = Math.round(performance.now() - t0);
  }
}

const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

/** sha256 of a (large) file, read in 4 MiB pieces. */
function fileSha256(path: string): string {
  const h = createHash('sha256');
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(4 << 20);
    for (let n: number; (n = readSync(fd, buf, 0, buf.length, null)) > 0; ) h.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return h.digest('hex');
}

/** The OCI architecture of an ELF binary (its e_machine). */
export function elfArchitecture(path: string): string {
  const fd = openSync(path, 'r');
  const h = Buffer.alloc(20);
  try {
    readSync(fd, h, 0, 20, 0);
  } finally {
    closeSync(fd);
  }
  if (h.readUInt32BE(0) !== 0x7f454c46) throw new ImageBuildError(`${path} is not an ELF binary: the image needs Linux's Node (node@24 installs node-linux-<arch> on Linux)`);
  const machine = h.readUInt16LE(18);
  const arch = ({ 62: 'amd64', 183: 'arm64' } as Record<number, string>)[machine];
  if (!arch) throw new ImageBuildError(`${path}: unsupported ELF machine ${machine}`);
  return arch;
}

/**
 * The production node_modules for the project's package.json and lock: `npm ci --omit=dev
 * --ignore-scripts` in a staging directory, kept in the cache under the digest of both. Scripts
 * are not run: the only one is our own `install` (the addon), taken from native/build instead.
 */
function productionInstall(root: string, cacheDir: string, log: (l: string) => void): string {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
  // Only what npm ci compares with the lock: a change of scripts does not invalidate the install.
  const staged: Record<string, unknown> = {};
  for (const k of ['name', 'version', 'dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies', 'overrides']) if (k in pkg) staged[k] = pkg[k];
  const stagedJson = `${JSON.stringify(staged, null, 2)}\n`;
  const lock = readFileSync(join(root, 'package-lock.json'));
  const key = sha256(Buffer.concat([Buffer.from(stagedJson), Buffer.from('\0'), lock])).slice(0, 16);
  const dir = join(cacheDir, `deps-${key}`);
  if (existsSync(join(dir, 'node_modules'))) return join(dir, 'node_modules');
  log(`npm ci --omit=dev in ${dir} (production dependencies; cached for this package.json and lock)`);
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  writeFileSync(join(tmp, 'package.json'), stagedJson);
  writeFileSync(join(tmp, 'package-lock.json'), lock);
  const r = spawnSync('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: tmp,
    encoding: 'utf8',
    env: { ...process.env, npm_config_update_notifier: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (r.error || r.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new ImageBuildError(`npm ci --omit=dev failed (${r.error?.message ?? `exit ${r.status}`}): ${`${r.stderr ?? ''}`.trim().split('\n').slice(-3).join(' | ')}`);
  }
  try {
    renameSync(tmp, dir);
  } catch (err) {
    // Another build finished the same install first: use that one.
    rmSync(tmp, { recursive: true, force: true });
    if (!existsSync(join(dir, 'node_modules'))) throw err;
  }
  return join(dir, 'node_modules');
}

/** Node from the pinned package, stripped (cached per binary) unless `strip` is off. */
function nodeBinary(root: string, cacheDir: string, strip: boolean, log: (l: string) => void): { path: string; source: string; bytes: number; strippedBytes: number | null; version: string } {
  const link = join(root, 'node_modules/.bin/node');
  if (!existsSync(link)) throw new ImageBuildError(`${link} is missing: run npm ci first (the image takes Node from the pinned devDependency node@24)`);
  const source = realpathSync(link);
  const r = spawnSync(source, ['--version'], { encoding: 'utf8' });
  const version = r.stdout?.trim() ?? '';
  if (!/^v24\./.test(version)) throw new ImageBuildError(`${source} is not Node 24 (--version: ${version || r.error?.message || r.stderr})`);
  const bytes = lstatSync(source).size;
  if (!strip) return { path: source, source, bytes, strippedBytes: null, version };
  const out = join(cacheDir, `node-${version}-${fileSha256(source).slice(0, 16)}-stripped`);
  if (!existsSync(out)) {
    log(`strip --strip-all ${source} (its debug symbols; cached)`);
    mkdirSync(cacheDir, { recursive: true });
    const tmp = `${out}.tmp-${process.pid}`;
    const s = spawnSync('strip', ['--strip-all', '-o', tmp, source], { encoding: 'utf8' });
    if (s.error || s.status !== 0) {
      rmSync(tmp, { force: true });
      throw new ImageBuildError(`strip failed (${s.error?.message ?? s.stderr.trim()}): install binutils, or build with --no-strip`);
    }
    const check = spawnSync(tmp, ['--version'], { encoding: 'utf8' });
    if (check.stdout?.trim() !== version) throw new ImageBuildError(`the stripped Node does not run (${check.stderr || check.error?.message}); build with --no-strip`);
    renameSync(tmp, out);
  }
  return { path: out, source, bytes, strippedBytes: lstatSync(out).size, version };
}

/** The entries of a host directory tree, below `prefix` in the image (modes normalized). */
function treeEntries(dir: string, prefix: string): TarEntry[] {
  const out: TarEntry[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const p = join(dir, r);
      const st = lstatSync(p);
      if (st.isDirectory()) {
        out.push({ type: 'dir', path: `${prefix}/${r}`, mode: 0o755 });
        walk(r);
      } else if (st.isSymbolicLink()) {
        out.push({ type: 'symlink', path: `${prefix}/${r}`, target: readlinkSync(p) });
      } else if (st.isFile()) {
        out.push({ type: 'file', path: `${prefix}/${r}`, mode: normalMode(st.mode), size: st.size, source: { file: p } });
      } else {
        throw new ImageBuildError(`${p}: neither a file, a directory nor a symlink`);
      }
    }
  };
  walk('');
  return out;
}

/** The package a path below node_modules belongs to (the innermost `node_modules/<name>`). */
function packageOf(rel: string): string {
  const parts = rel.split('/');
  const i = parts.lastIndexOf('node_modules');
  const start = i + 1;
  return parts[start]?.startsWith('@') ? parts.slice(0, start + 2).join('/') : parts.slice(0, start + 1).join('/');
}

/** Package sizes of the kept tree: per location (`a`, `a/node_modules/b`). */
function sizesByLocation(kept: PruneResult['kept']): Map<string, number> {
  const m = new Map<string, number>();
  for (const e of kept) if (e.type === 'file') m.set(packageOf(e.rel), (m.get(packageOf(e.rel)) ?? 0) + e.size);
  return m;
}

/**
 * Each direct runtime dependency with its transitive dependencies, resolved as Node does
 * (nearest node_modules up the tree) over the lock's package locations.
 */
function dependencyClosures(root: string, nodeModules: string, sizes: Map<string, number>): PackageSize[] {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string>; dev?: boolean }>;
  };
  const pkgs = lock.packages;
  const resolveFrom = (loc: string, name: string): string | null => {
    // loc: 'node_modules/a/node_modules/b'; candidates: its own node_modules, then each parent's.
    let base = loc;
    for (;;) {
      const cand = base ? `${base}/node_modules/${name}` : `node_modules/${name}`;
      if (pkgs[cand] && existsSync(join(nodeModules, '..', cand))) return cand;
      if (!base) return null;
      const i = base.lastIndexOf('/node_modules/');
      base = i < 0 ? '' : base.slice(0, i);
    }
  };
  const rootDeps = Object.keys(pkgs['']?.dependencies ?? {}).sort();
  return rootDeps
    .map((dep) => {
      const seen = new Set<string>();
      const stack = [resolveFrom('', dep)];
      while (stack.length) {
        const loc = stack.pop();
        if (!loc || seen.has(loc)) continue;
        seen.add(loc);
        const p = pkgs[loc]!;
        for (const name of Object.keys({ ...p.dependencies, ...p.optionalDependencies })) stack.push(resolveFrom(loc, name));
      }
      let bytes = 0;
      for (const loc of seen) bytes += sizes.get(loc.replace(/^node_modules\//, '')) ?? 0;
      return { name: `${dep} (${seen.size} packages)`, bytes };
    })
    .sort((a, b) => b.bytes - a.bytes);
}

/** What goes into the layers, before parent directories are added. */
export interface LayerInput {
  /** The project: package.json, package-lock.json, bin/, src/. */
  root: string;
  /** The base layer's entries (image/base.ts). */
  base: TarEntry[];
  /** The Node binary to ship. */
  node: string;
  /** The production node_modules and what of it stays (image/prune.ts). */
  nodeModules: string;
  kept: PruneResult['kept'];
  /** The raw-socket addon. */
  addon: string;
  /** Node's compile cache of src/ (image/compile-cache.ts), shipped as APP_DIR/.compile-cache. */
  compileCache: string;
  /** The directory holding the daemons' bundles and starters (scripts/bundle.ts: DAEMON_DIST_FILES), shipped in APP_DIR/dist. */
  daemonBundle: string;
}

/**
 * The daemons' bundles of `root`/src/ (scripts/bundle.ts, esbuild from this repository's
 * devDependencies), written to a fresh directory of this build below `cacheDir` (the caller
 * removes it), which it returns. Throws ImageBuildError (one line) when esbuild is missing or src/
 * does not build.
 */
async function stagedDaemonBundle(root: string, cacheDir: string): Promise<string> {
  if (!existsSync(join(REPO_ROOT, 'node_modules/esbuild/package.json')))
    throw new ImageBuildError(`${REPO_ROOT}/node_modules/esbuild is missing: run npm ci first (the image's daemons run their bundle, built with esbuild)`);
  mkdirSync(cacheDir, { recursive: true });
  const dir = mkdtempSync(join(cacheDir, 'daemon-bundle-'));
  const { bundle } = await import('../scripts/bundle.ts');
  try {
    await bundle({ root, dist: dir, daemonOnly: true, quiet: true });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const first = (err as { errors?: { text: string; location?: { file: string; line: number } | null }[] }).errors?.[0];
    const why = first ? `${first.location ? `${first.location.file}:${first.location.line}: ` : ''}${first.text}` : (err as Error).message;
    throw new ImageBuildError(`the daemons' bundles of ${root}/src/daemon-cli.ts do not build (${why})`);
  }
  return dir;
}

/**
 * Node's compile cache for the image (image/compile-cache.ts), built by the Node that ships in a
 * copy of the app laid out as APP_DIR (bin, src, package.json, the production node_modules, the
 * addon) below `cacheDir`. Returns the cache directory.
 */
function stagedCompileCache(root: string, nodeModules: string, addon: string, node: string, cacheDir: string, log: (l: string) => void): string {
  const stage = join(cacheDir, 'compile-cache-app');
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(join(stage, 'native/build'), { recursive: true });
  for (const p of ['bin', 'src', 'package.json']) cpSync(join(root, p), join(stage, p), { recursive: true });
  cpSync(addon, join(stage, 'native/build/l2.node'));
  symlinkSync(resolve(nodeModules), join(stage, 'node_modules'));
  try {
    return buildCompileCache({ node, app: stage, log });
  } catch (err) {
    throw new ImageBuildError((err as Error).message);
  }
}

/** The four layers (base, node, deps, app) and their entries: the image's layout (image/layout.ts). */
export function layerSpecs(i: LayerInput): [name: string, entries: TarEntry[]][] {
  const app = (p: string): string => `${APP_DIR.slice(1)}/${p}`;
  const file = (path: string, source: string, mode?: number): TarEntry => {
    const st = lstatSync(source);
    return { type: 'file', path, mode: mode ?? normalMode(st.mode), size: st.size, source: { file: source } };
  };
  const specs: [string, TarEntry[]][] = [
    ['base', i.base],
    ['node', [file(NODE_PATH.slice(1), i.node, 0o755)]],
    [
      'deps',
      [
        { type: 'dir', path: app('node_modules'), mode: 0o755 },
        ...i.kept.map((e): TarEntry => {
          const path = app(`node_modules/${e.rel}`);
          if (e.type === 'dir') return { type: 'dir', path, mode: 0o755 };
          if (e.type === 'symlink') return { type: 'symlink', path, target: readlinkSync(join(i.nodeModules, e.rel)) };
          return { type: 'file', path, mode: normalMode(e.mode), size: e.size, source: { file: join(i.nodeModules, e.rel) } };
        }),
        file(app('native/build/l2.node'), i.addon, 0o755),
      ],
    ],
    [
      'app',
      [
        file(app('package.json'), join(i.root, 'package.json'), 0o644),
        file(app('package-lock.json'), join(i.root, 'package-lock.json'), 0o644),
        { type: 'dir', path: app('bin'), mode: 0o755 },
        ...treeEntries(join(i.root, 'bin'), app('bin')),
        { type: 'dir', path: app('src'), mode: 0o755 },
        ...treeEntries(join(i.root, 'src'), app('src')),
        ...DAEMON_DIST_FILES.map((f) => file(app(`dist/${f}`), join(i.daemonBundle, f), 0o644)),
        // read-only for everyone: the root file system is (deploy/), Node only reads it
        { type: 'dir', path: app(COMPILE_CACHE_DIR), mode: 0o555 },
        ...treeEntries(i.compileCache, app(COMPILE_CACHE_DIR)).map((e): TarEntry => (e.type === 'dir' ? { ...e, mode: 0o555 } : e.type === 'file' ? { ...e, mode: 0o444 } : e)),
      ],
    ],
  ];
  // Every APP_PATHS entry is in some layer (test/unit/image-dockerfile.test.ts checks the Dockerfile's side).
  for (const p of APP_PATHS) if (!specs.some(([, es]) => es.some((e) => e.path === app(p)))) throw new Error(`layout: ${p} is in no layer`);
  return specs;
}

/** Builds the archive. */
export async function buildImage(o: BuildOptions): Promise<BuildResult> {
  const timings: Record<string, number> = {};
  const t0 = performance.now();
  const root = resolve(o.root);
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; license?: string; description?: string };
  const name = imageName(pkg.version);
  const addon = join(root, 'native/build/l2.node');
  if (!existsSync(addon)) {
    const why = existsSync(join(root, 'native/build/l2.node.unavailable')) ? ` (${readFileSync(join(root, 'native/build/l2.node.unavailable'), 'utf8').trim()})` : '';
    throw new ImageBuildError(`native/build/l2.node is missing${why}: the image's speaker needs the raw-socket addon; run sh native/build.sh (needs a C compiler)`);
  }
  for (const p of ['bin/metallb-ts', 'src/cli.ts', 'package-lock.json']) if (!existsSync(join(root, p))) throw new ImageBuildError(`${join(root, p)} is missing`);

  const node = await timed(timings, 'node', () => nodeBinary(root, o.cacheDir, o.strip, o.log));
  const architecture = elfArchitecture(node.source);
  const nodeModules = await timed(timings, 'npmCi', () => productionInstall(root, o.cacheDir, o.log));
  const tree = await timed(timings, 'prune', () => pruneTree(nodeModules, o.prune));
  const base = await timed(timings, 'base', () => baseEntries([node.source, addon]));
  const debs = await timed(timings, 'dpkg', () => debianPackages(base.hostFiles));

  const compileCache = await timed(timings, 'compileCache', () => stagedCompileCache(root, nodeModules, addon, node.path, o.cacheDir, o.log));
  const daemonBundle = await timed(timings, 'daemonBundle', () => stagedDaemonBundle(root, o.cacheDir));

  const mtime = o.sourceDateEpoch ?? 0;
  const specs = layerSpecs({ root, base: base.entries, node: node.path, nodeModules, kept: tree.kept, addon, compileCache, daemonBundle });

  const blobDir = o.layerCache ? join(o.cacheDir, 'layers') : mkdtempSync(join(o.cacheDir, 'layers-tmp-'));
  const layerOpts = { mtime, gzipLevel: o.gzipLevel, blobDir, reuse: o.layerCache };
  const layers: Layer[] = [];
  for (const [layerName, entries] of specs) {
    layers.push(await timed(timings, `layer:${layerName}`, () => writeLayer(layerName, entries, layerOpts)));
  }
  rmSync(daemonBundle, { recursive: true, force: true });

  const created = o.sourceDateEpoch === null ? undefined : new Date(o.sourceDateEpoch * 1000).toISOString();
  const config: ImageConfig = {
    architecture,
    os: 'linux',
    ...(created ? { created } : {}),
    config: {
      ...(USER ? { User: USER } : {}),
      Env: Object.entries(ENV).map(([k, v]) => `${k}=${v}`),
      Entrypoint: ENTRYPOINT,
      Cmd: CMD,
      WorkingDir: APP_DIR,
      Labels: {
        'org.opencontainers.image.title': 'metallb-ts',
        'org.opencontainers.image.description': pkg.description ?? '',
        'org.opencontainers.image.version': pkg.version,
        'org.opencontainers.image.licenses': pkg.license ?? '',
        'io.metallb-ts.node': `${node.version}${node.strippedBytes === null ? '' : ' (stripped)'}`,
        'io.metallb-ts.base': debs.join(', '),
      },
    },
    history: [
      { ...(created ? { created } : {}), created_by: `image/build.ts: base (${base.hostFiles.join(' ')}; /etc/passwd, /etc/group, /etc/nsswitch.conf, /tmp)` },
      { ...(created ? { created } : {}), created_by: `image/build.ts: ${NODE_PATH} (node@24 ${node.version}${node.strippedBytes === null ? '' : ', strip --strip-all'})` },
      { ...(created ? { created } : {}), created_by: `image/build.ts: ${APP_DIR}/node_modules (npm ci --omit=dev${o.prune ? ', pruned by image/prune.ts' : ''}) and native/build/l2.node` },
      { ...(created ? { created } : {}), created_by: `image/build.ts: ${APP_DIR}/{package.json,package-lock.json,bin,src,${DAEMON_DIST_FILES.map((f) => `dist/${f}`).join(',')},.compile-cache}` },
    ],
  };
  const written = await timed(timings, 'archive', () => writeArchive(o.out, name, layers, config, mtime));
  if (!o.layerCache) rmSync(blobDir, { recursive: true, force: true });
  timings.total = Math.round(performance.now() - t0);

  const sizes = sizesByLocation(tree.kept);
  const byName = new Map<string, number>();
  for (const [loc, bytes] of sizes) {
    const i = loc.lastIndexOf('node_modules/');
    const short = i < 0 ? loc : loc.slice(i + 'node_modules/'.length);
    byName.set(short, (byName.get(short) ?? 0) + bytes);
  }
  const installedBytes = tree.kept.reduce((n, e) => n + e.size, 0) + tree.dropped.reduce((n, d) => n + d.bytes, 0);
  return {
    archive: written.archive,
    name,
    manifestDigest: written.manifestDigest,
    configDigest: written.configDigest,
    archiveSize: written.archiveSize,
    architecture,
    layers: layers.map(({ path: _path, ...l }) => l),
    node: { version: node.version, source: node.source, bytes: node.bytes, strippedBytes: node.strippedBytes },
    nodeModules: {
      installedBytes,
      imageBytes: tree.kept.reduce((n, e) => n + e.size, 0),
      droppedByReason: droppedByReason(tree.dropped),
      biggest: [...byName]
        .map(([n, bytes]) => ({ name: n, bytes }))
        .sort((a, b) => b.bytes - a.bytes)
        .slice(0, 10),
      dependencies: dependencyClosures(root, nodeModules, sizes),
    },
    baseFiles: base.hostFiles,
    debianPackages: debs,
    timingsMs: timings,
  };
}

/** The human summary of a build. */
export function summary(r: BuildResult): string {
  const lines: string[] = [];
  const total = r.layers.reduce((a, l) => ({ c: a.c + l.size, u: a.u + l.uncompressedSize }), { c: 0, u: 0 });
  lines.push(`${r.archive}: ${r.name} (linux/${r.architecture}), ${MB(r.archiveSize)}`);
  lines.push(`  manifest ${r.manifestDigest}`);
  lines.push(`  layer  compressed  uncompressed  entries`);
  for (const l of r.layers) lines.push(`  ${l.name.padEnd(5)} ${MB(l.size).padStart(11)} ${MB(l.uncompressedSize).padStart(13)} ${String(l.entries).padStart(8)}${l.cached ? '  (cached)' : ''}`);
  lines.push(`  total ${MB(total.c).padStart(11)} ${MB(total.u).padStart(13)}`);
  lines.push(`node ${r.node.version}: ${MB(r.node.bytes)}${r.node.strippedBytes === null ? ' (not stripped)' : `, stripped ${MB(r.node.strippedBytes)}`}`);
  lines.push(
    `node_modules: ${MB(r.nodeModules.installedBytes)} installed, ${MB(r.nodeModules.imageBytes)} in the image${r.nodeModules.droppedByReason.length ? ` (left out: ${r.nodeModules.droppedByReason.map(([k, b]) => `${k} ${MB(b)}`).join(', ')})` : ''}`,
  );
  lines.push(`  biggest packages: ${r.nodeModules.biggest.map((p) => `${p.name} ${MB(p.bytes)}`).join(', ')}`);
  lines.push(`  with their dependencies: ${r.nodeModules.dependencies.map((p) => `${p.name} ${MB(p.bytes)}`).join(', ')}`);
  lines.push(`base: ${r.baseFiles.join(' ')}`);
  lines.push(
    `time: ${(r.timingsMs.total! / 1000).toFixed(1)} s (${Object.entries(r.timingsMs)
      .filter(([k]) => k !== 'total')
      .map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`)
      .join(', ')})`,
  );
  lines.push(`import: ctr -n k8s.io images import ${r.archive}`);
  return lines.join('\n');
}

const USAGE = `usage: npm run image [-- OPTIONS]   (node image/build.ts [OPTIONS])
  -o, --output FILE   the OCI archive to write (default .cache/image/metallb-ts-<version>.oci.tar)
  --cache-dir DIR     cache of the production install, stripped Node and layers (default .cache/image)
  --root DIR          the project to package (default this repository)
  --no-strip          keep Node's debug symbols (+18 MB)
  --no-prune          keep node_modules whole (type declarations, source maps, docs, tests: +50 MB)
  --gzip-level N      1-9 (default 6: level 9 is 0.3% smaller and 2.5 times slower)
  --no-layer-cache    compress every layer again rather than reuse the cached blobs
  --json              print the result as JSON on stdout
SOURCE_DATE_EPOCH sets the files' mtime and the config's created time (default: 0 and none).`;

/** The CLI: exit 0 built, 2 bad usage or a one-line build error. */
export async function cli(argv: readonly string[]): Promise<number> {
  let root = REPO_ROOT;
  let out: string | null = null;
  let cacheDir: string | null = null;
  let strip = true;
  let prune = true;
  let gzipLevel = 6;
  let json = false;
  let layerCache = true;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new ImageBuildError(`${a} needs a value`);
      return v;
    };
    if (a === '-o' || a === '--output') out = value();
    else if (a === '--cache-dir') cacheDir = value();
    else if (a === '--root') root = value();
    else if (a === '--no-strip') strip = false;
    else if (a === '--no-prune') prune = false;
    else if (a === '--gzip-level') gzipLevel = Number(value());
    else if (a === '--json') json = true;
    else if (a === '--no-layer-cache') layerCache = false;
    else if (a === '-h' || a === '--help') {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    } else {
      process.stderr.write(`image: unknown argument ${a}\n${USAGE}\n`);
      return 2;
    }
  }
  if (!Number.isInteger(gzipLevel) || gzipLevel < 1 || gzipLevel > 9) {
    process.stderr.write('image: --gzip-level must be 1-9\n');
    return 2;
  }
  const sde = process.env.SOURCE_DATE_EPOCH;
  if (sde !== undefined && !/^\d+$/.test(sde)) {
    process.stderr.write(`image: SOURCE_DATE_EPOCH must be a number of seconds, not ${sde}\n`);
    return 2;
  }
  root = resolve(root);
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
  const result = await buildImage({
    root,
    out: resolve(out ?? join(root, `.cache/image/metallb-ts-${version}.oci.tar`)),
    cacheDir: resolve(cacheDir ?? join(root, '.cache/image')),
    strip,
    prune,
    gzipLevel,
    layerCache,
    sourceDateEpoch: sde === undefined ? null : Number(sde),
    log: (l) => process.stderr.write(`image: ${l}\n`),
  });
  process.stdout.write(json ? `${JSON.stringify(result, null, 2)}\n` : `${summary(result)}\n`);
  return 0;
}

if (import.meta.main) {
  cli(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      if (err instanceof ImageBuildError) {
        process.stderr.write(`image: ${err.message}\n`);
        process.exitCode = 2;
      } else {
        throw err;
      }
    },
  );
}
