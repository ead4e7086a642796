/**
 * The Dockerfile and `npm run image` (image/build.ts) produce the same layout: there is no Docker
 * engine here to build the Dockerfile, so this reads it. Its final stage's COPY destinations must
 * be the paths the builder's layers put under /opt/metallb-ts (layerSpecs on a small fake tree),
 * and Node is where the builder puts it (node:24-slim's /usr/local/bin/node); ENV, WORKDIR,
 * ENTRYPOINT, CMD and USER must be the configuration the builder writes (image/layout.ts); the
 * build stage prunes node_modules with image/prune.ts as the builder does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { ROOT } from '../helpers/cli.ts';
import { layerSpecs } from '../../image/build.ts';
import { APP_DIR, APP_PATHS, CMD, ENTRYPOINT, ENV, NODE_PATH, USER } from '../../image/layout.ts';
import { pruneTree } from '../../image/prune.ts';
import { DAEMON_DIST_FILES } from '../../scripts/bundle.ts';

interface Instruction {
  op: string;
  args: string;
  line: number;
}

/** The Dockerfile's instructions (continuation lines joined, comments dropped), split into stages. */
function parseDockerfile(text: string): Instruction[][] {
  const stages: Instruction[][] = [];
  let buf = '';
  let start = 0;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!buf && (line === '' || line.startsWith('#'))) return;
    if (buf && line.startsWith('#')) return;
    if (!buf) start = i + 1;
    buf += ` ${line.replace(/\\$/, '')}`;
    if (line.endsWith('\\')) return;
    const m = /^\s*(\S+)\s+([\s\S]*)$/.exec(buf)!;
    const ins = { op: m[1]!.toUpperCase(), args: m[2]!.trim().replace(/\s+/g, ' '), line: start };
    buf = '';
    if (ins.op === 'FROM') stages.push([]);
    stages[stages.length - 1]!.push(ins);
  });
  return stages;
}

const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const stages = parseDockerfile(dockerfile);
const final = stages[stages.length - 1]!;
const build = stages[0]!;
const all = (stage: Instruction[], op: string): Instruction[] => stage.filter((i) => i.op === op);
const one = (stage: Instruction[], op: string): Instruction => {
  const found = all(stage, op);
  assert.equal(found.length, 1, `one ${op} in the stage, found ${found.length}`);
  return found[0]!;
};

/** ENV lines: `K=V K2=V2` (the form the Dockerfile uses). */
function envOf(stage: Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const ins of all(stage, 'ENV')) {
    for (const kv of ins.args.split(' ')) {
      const eq = kv.indexOf('=');
      assert.ok(eq > 0, `ENV in the KEY=VALUE form (line ${ins.line}): ${kv}`);
      env[kv.slice(0, eq)] = kv.slice(eq + 1);
    }
  }
  return env;
}

/** The final stage's COPY destinations as absolute paths (relative ones resolved against WORKDIR). */
function copyDestinations(stage: Instruction[]): string[] {
  const workdir = one(stage, 'WORKDIR').args;
  const out: string[] = [];
  for (const ins of all(stage, 'COPY')) {
    const words = ins.args.split(' ').filter((w) => !w.startsWith('--'));
    const dest = words[words.length - 1]!;
    const sources = words.slice(0, -1);
    const abs = posix.resolve(workdir, dest);
    if (dest.endsWith('/')) for (const s of sources) out.push(posix.join(abs, posix.basename(s)));
    else {
      assert.equal(sources.length, 1, `COPY with several sources needs a directory destination (line ${ins.line})`);
      out.push(abs);
    }
  }
  return out.sort();
}

/** The paths directly given to the builder's layers below APP_DIR (and Node), from a small fake project. */
function builderLayout(): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-image-layout-'));
  try {
    const root = join(dir, 'project');
    for (const d of ['bin', 'src', 'native/build']) mkdirSync(join(root, d), { recursive: true });
    for (const f of ['package.json', 'package-lock.json', 'bin/metallb-ts', 'src/cli.ts', 'native/build/l2.node']) writeFileSync(join(root, f), 'x');
    const nm = join(dir, 'node_modules');
    mkdirSync(join(nm, 'commander'), { recursive: true });
    mkdirSync(join(nm, '.bin'), { recursive: true });
    writeFileSync(join(nm, 'commander/package.json'), '{}');
    symlinkSync('../commander/index.js', join(nm, '.bin/commander'));
    writeFileSync(join(dir, 'node'), 'x');
    const cc = join(dir, 'compile-cache');
    mkdirSync(join(cc, 'v24.0.0-x64-00000000-0'), { recursive: true });
    writeFileSync(join(cc, 'v24.0.0-x64-00000000-0/0123abcd'), 'x');
    const db = join(dir, 'daemon-bundle');
    mkdirSync(db);
    for (const f of DAEMON_DIST_FILES) writeFileSync(join(db, f), 'x');
    const specs = layerSpecs({ root, base: [], node: join(dir, 'node'), nodeModules: nm, kept: pruneTree(nm).kept, addon: join(root, 'native/build/l2.node'), compileCache: cc, daemonBundle: db });
    const paths = specs.flatMap(([, entries]) => entries.map((e) => `/${e.path}`));
    // What a COPY would name: Node, and below APP_DIR the outermost paths (node_modules, bin, src,
    // the addon file, the daemons' bundles and their starters), not everything inside them.
    const top = new Set<string>();
    for (const p of paths) {
      if (p === NODE_PATH) top.add(p);
      if (!p.startsWith(`${APP_DIR}/`)) continue;
      const rel = p.slice(APP_DIR.length + 1);
      const named = APP_PATHS.find((a) => rel === a || rel.startsWith(`${a}/`));
      assert.ok(named, `the builder puts ${p} outside the layout's APP_PATHS`);
      top.add(`${APP_DIR}/${named}`);
    }
    return [...top].sort();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the final stage copies exactly what the builder lays out, to the same places', () => {
  const app = APP_PATHS.map((p) => `${APP_DIR}/${p}`).sort();
  assert.deepEqual(builderLayout(), [...app, NODE_PATH].sort(), 'the builder (layerSpecs) and image/layout.ts');
  assert.deepEqual(copyDestinations(final), app, "the Dockerfile's COPY destinations and image/layout.ts");
});

test("Node is node:24-slim's, at the path the builder uses", () => {
  // The official node images install Node at /usr/local/bin/node; bin/metallb-ts finds it through PATH.
  assert.equal(one(final, 'FROM').args, 'node:24-slim');
  assert.equal(NODE_PATH, '/usr/local/bin/node');
  assert.ok(ENV.PATH!.split(':').includes('/usr/local/bin'));
});

test('WORKDIR, ENV, ENTRYPOINT, CMD and USER are the configuration the builder writes', () => {
  assert.equal(one(final, 'WORKDIR').args, APP_DIR);
  assert.deepEqual(envOf(final), ENV);
  assert.deepEqual(JSON.parse(one(final, 'ENTRYPOINT').args), ENTRYPOINT);
  assert.deepEqual(JSON.parse(one(final, 'CMD').args), CMD);
  // No USER: root, as the builder's config (the speaker needs root with NET_RAW; deploy/ runs the controller as nobody).
  assert.equal(USER, '');
  assert.deepEqual(all(final, 'USER'), []);
});

test('node_modules is the production install, pruned by image/prune.ts', () => {
  const run = all(build, 'RUN')
    .map((i) => i.args)
    .join(' && ');
  assert.match(run, /npm ci --omit=dev/);
  assert.match(run, /node image\/prune\.ts node_modules/);
  assert.ok(
    all(build, 'COPY').some((i) => i.args === 'image/prune.ts ./image/prune.ts'),
    'the build stage copies image/prune.ts',
  );
  // .dockerignore must let image/prune.ts into the build context.
  const ignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  for (const pattern of ignore) assert.ok(!['image', 'image/', 'image/prune.ts', '*.ts', 'image/*'].includes(pattern), `.dockerignore excludes ${pattern}`);
});

test("the daemons' bundles: built by scripts/bundle.ts from src/ in a stage of its own, run by bin/metallb-ts without find", () => {
  const stage = stages.find((st) => /\bAS bundle$/i.test(st[0]!.args));
  assert.ok(stage, 'a stage named bundle');
  const run = all(stage, 'RUN').map((i) => i.args);
  assert.ok(
    run.some((r) => /^npm ci\b/.test(r) && !/--omit=dev/.test(r)),
    'the full install (esbuild is a devDependency)',
  );
  assert.ok(run.includes('node scripts/bundle.ts'), run.join(' | '));
  assert.ok(
    all(stage, 'COPY').some((i) => i.args === 'src ./src'),
    'the bundle is built from the src/ the image ships',
  );
  const copy = all(final, 'COPY').find((i) => i.args.startsWith('--from=bundle '));
  assert.equal(copy?.args, `--from=bundle ${DAEMON_DIST_FILES.map((f) => `/opt/metallb-ts/dist/${f}`).join(' ')} ./dist/`);
  // The image has no find (image/base.ts): bin/metallb-ts must take the bundle on METALLB_TS_BUNDLE=1.
  assert.equal(ENV.METALLB_TS_BUNDLE, '1');
  assert.match(readFileSync(join(ROOT, 'bin/metallb-ts'), 'utf8'), /if \[ "\$\{METALLB_TS_BUNDLE-\}" = 1 \]; then\n\s*entry=\$bundle/);
});
