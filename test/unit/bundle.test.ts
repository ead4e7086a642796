/**
 * The bundles (scripts/bundle.ts → dist/cli.cjs and its starter dist/metallb-ts.cjs; each daemon's
 * dist/speaker.cjs, dist/controller.cjs and their starters dist/metallb-ts-speaker.cjs,
 * dist/metallb-ts-controller.cjs) against src/cli.ts, in a copy of the tree (bin/, src/, scripts/,
 * examples/, package.json; node_modules linked): the copy's bin/metallb-ts runs a bundle when no
 * file under src/ is newer than it and src/cli.ts otherwise (with METALLB_TS_BUNDLE=1, as in the
 * image, which has no find: the bundle without comparing), each daemon from its own bundle, which
 * holds no diagnostics command and not the other daemon; each prints byte for byte what src/cli.ts prints
 * (stdout, stderr, exit status): explain, validate, whois and allocate --dry-run on examples/, as
 * text and JSON; the daemons' help and usage errors. Real processes; the working tree is not modified.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isAscii } from 'node:buffer';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers/cli.ts';
import { DAEMONS, type Daemon, daemonBundle, daemonStarter as starterIn } from '../../scripts/bundle.ts';

const NODE = process.execPath;
const copy = mkdtempSync(join(tmpdir(), 'metallb-ts-bundle-'));
const cache = join(copy, '.node-compile-cache');
for (const dir of ['bin', 'src', 'scripts', 'examples']) cpSync(join(ROOT, dir), join(copy, dir), { recursive: true });
cpSync(join(ROOT, 'package.json'), join(copy, 'package.json'));
symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
mkdirSync(join(copy, 'native/build'), { recursive: true });
if (existsSync(join(ROOT, 'native/build/l2.node'))) cpSync(join(ROOT, 'native/build/l2.node'), join(copy, 'native/build/l2.node'));
const build = spawnSync(NODE, [join(copy, 'scripts/bundle.ts')], { encoding: 'utf8' });
process.on('exit', () => rmSync(copy, { recursive: true, force: true }));

const BIN = join(copy, 'bin/metallb-ts');
const STARTER = join(copy, 'dist/metallb-ts.cjs');
/** A daemon's starter in the copy's dist/. */
const daemonStarter = (d: Daemon): string => starterIn(d, join(copy, 'dist'));
const EXAMPLE = join(copy, 'examples/cluster.yaml');
const CP_ONLY = join(copy, 'examples/cluster-cp-only.yaml');
const env: NodeJS.ProcessEnv = { ...process.env, NODE_COMPILE_CACHE: cache, NO_COLOR: '1' };
delete env['METALLB_TS_NO_BUNDLE'];
delete env['NODE_DISABLE_COMPILE_CACHE'];

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}
const run = (cmd: string, args: string[], extra: Record<string, string> = {}): Run => {
  const r = spawnSync(cmd, args, { encoding: 'utf8', cwd: copy, env: { ...env, ...extra } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};

test('npm run build (scripts/bundle.ts) writes dist/cli.cjs and its starter, dated when the build started', () => {
  assert.equal(build.status, 0, build.stderr);
  const started = statSync(STARTER).mtimeMs;
  assert.equal(statSync(join(copy, 'dist/cli.cjs')).mtimeMs, started);
  assert.ok(started <= Date.now());
  // Node's built-in modules are taken when first used, never imported at the top of the bundle.
  const bytes = readFileSync(join(copy, 'dist/cli.cjs'));
  const bundle = bytes.toString('utf8');
  assert.doesNotMatch(bundle, /^import /m);
  // ASCII, so that the starter reads it as a one-byte string (no UTF-8 decoding).
  assert.ok(isAscii(bytes), 'dist/cli.cjs has characters beyond ASCII');
  assert.match(bundle, /process\.getBuiltinModule\("node:tls"\)/);
});

test('bin/metallb-ts runs the bundle when no file under src/ is newer, src/cli.ts when one is or METALLB_TS_NO_BUNDLE is set', () => {
  // A line only src/cli.ts prints; dated before the bundle, the copy's src/ is still "not newer".
  const cli = join(copy, 'src/cli.ts');
  const original = readFileSync(cli, 'utf8');
  try {
    writeFileSync(cli, `process.stderr.write('ran src/cli.ts\\n');\n${original}`);
    const old = new Date(statSync(STARTER).mtimeMs - 60_000);
    utimesSync(cli, old, old);
    utimesSync(join(copy, 'src'), old, old);
    const fromBundle = run(BIN, ['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE]);
    assert.equal(fromBundle.status, 0, fromBundle.stderr);
    assert.doesNotMatch(fromBundle.stderr, /ran src\/cli\.ts/);
    assert.match(fromBundle.stdout, /^Verdict: +announced by /m);
    assert.match(run(BIN, ['--version']).stderr, /^$/);
    assert.equal(run(BIN, ['speaker', '--help']).stderr, '');

    assert.match(run(BIN, ['--version'], { METALLB_TS_NO_BUNDLE: '1' }).stderr, /ran src\/cli\.ts/);

    // A file deeper in src/ saved after the build: src/cli.ts runs, for explain and the rest.
    const errors = join(copy, 'src/core/errors.ts');
    utimesSync(errors, new Date(), new Date());
    assert.match(run(BIN, ['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE]).stderr, /ran src\/cli\.ts/);
    assert.match(run(BIN, ['--version']).stderr, /ran src\/cli\.ts/);
    assert.match(run(BIN, ['controller', '--help']).stderr, /ran src\/cli\.ts/);

    // The container image (image/layout.ts): no find on PATH, METALLB_TS_BUNDLE=1: the daemons run
    // their bundle without the comparison (here src/ is newer); METALLB_TS_NO_BUNDLE=1 still wins.
    const noFind = mkdtempSync(join(tmpdir(), 'metallb-ts-no-find-'));
    try {
      assert.match(run(BIN, ['speaker', '--help'], { PATH: noFind }).stderr, /ran src\/cli\.ts/, 'no find: src/cli.ts');
      for (const d of DAEMONS) {
        const r = run(BIN, [d, '--help'], { PATH: noFind, METALLB_TS_BUNDLE: '1' });
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.stderr, '', `${d} runs dist/metallb-ts-${d}.cjs`);
        assert.match(run(BIN, [d, '--help'], { PATH: noFind, METALLB_TS_BUNDLE: '1', METALLB_TS_NO_BUNDLE: '1' }).stderr, /ran src\/cli\.ts/);
      }
      // Without the bundle's files (the image ships no dist/cli.cjs), src/cli.ts.
      rmSync(STARTER);
      assert.match(run(BIN, ['--version'], { PATH: noFind, METALLB_TS_BUNDLE: '1' }).stderr, /ran src\/cli\.ts/);
    } finally {
      rmSync(noFind, { recursive: true, force: true });
    }
  } finally {
    writeFileSync(cli, original);
  }
  // Rebuilt: the bundle again.
  const rebuilt = spawnSync(NODE, [join(copy, 'scripts/bundle.ts')], { encoding: 'utf8' });
  assert.equal(rebuilt.status, 0, rebuilt.stderr);
  assert.equal(run(BIN, ['--version']).stderr, '');
});

test('the bundle prints what src/cli.ts prints: explain, validate, whois, allocate --dry-run on examples/, text and JSON', () => {
  const cases: string[][] = [
    ['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE],
    ['explain', 'svc/nonexistent', '-n', 'shop', '-f', EXAMPLE],
    ['validate', '-f', EXAMPLE],
    ['validate', '-f', CP_ONLY],
    ['whois', '192.0.2.10', '-f', EXAMPLE],
    ['whois', '198.51.100.200', '-f', EXAMPLE],
    ['allocate', '--dry-run', '-f', EXAMPLE],
    ['allocate', '--dry-run', '-f', CP_ONLY],
    ['explain', '--help'],
    ['--version'],
  ];
  let checked = 0;
  for (const args of cases) {
    for (const out of args.includes('-f') ? [[], ['-o', 'json']] : [[]]) {
      const a = [...args, ...out];
      const src = run(NODE, [join(copy, 'src/cli.ts'), ...a]);
      const bundled = run(NODE, [STARTER, ...a]);
      assert.deepEqual(bundled, src, `metallb-ts ${a.join(' ')}`);
      assert.ok(src.stdout.length > 0 || src.stderr.length > 0, `metallb-ts ${a.join(' ')} printed nothing`);
      checked++;
    }
  }
  assert.equal(checked, 18);
});

test("the starter keeps V8's code cache of the bundle per command, writes it once and reuses it", () => {
  const dir = join(cache, 'metallb-ts-bundle');
  rmSync(dir, { recursive: true, force: true });
  const args = ['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE];
  const first = run(BIN, args);
  assert.equal(first.status, 0, first.stderr);
  const files = readdirSync(dir).filter((f) => f.endsWith('-explain'));
  assert.equal(files.length, 1, readdirSync(dir).join(', '));
  const written = statSync(join(dir, files[0]!)).mtimeMs;
  const second = run(BIN, args);
  assert.deepEqual(second, first);
  assert.equal(statSync(join(dir, files[0]!)).mtimeMs, written, 'the cache was rejected and written again');
  // An unwritable cache directory: the same output, no cache.
  writeFileSync(join(copy, 'not-a-dir'), '');
  assert.deepEqual(run(BIN, args, { NODE_COMPILE_CACHE: join(copy, 'not-a-dir') }), first);
});

/** A message of the OpenTelemetry API's source (its global registration), in a bundle that holds it. */
const OTEL_MARK = 'duplicate registration of API';

/** The build id a starter was written for (its BUILD_ID line). */
function buildIdOf(starter: string): string {
  const m = /^const BUILD_ID = '([0-9a-f]+)';$/m.exec(readFileSync(starter, 'utf8'));
  assert.ok(m, `${starter} names no build`);
  return m[1]!;
}

test("npm run build writes each daemon's bundle too: dated with the other, ASCII, smaller, neither a diagnostics command nor the other daemon in it", () => {
  assert.equal(build.status, 0, build.stderr);
  const started = statSync(STARTER).mtimeMs;
  const cli = readFileSync(join(copy, 'dist/cli.cjs'), 'latin1');
  const register = { speaker: 'registerSpeaker', controller: 'registerController' } as const;
  const ids = new Set([buildIdOf(STARTER)]);
  for (const d of DAEMONS) {
    const file = daemonBundle(d, join(copy, 'dist'));
    assert.equal(statSync(daemonStarter(d)).mtimeMs, started);
    assert.equal(statSync(file).mtimeMs, started);
    const bytes = readFileSync(file);
    assert.ok(isAscii(bytes), `dist/${d}.cjs has characters beyond ASCII`);
    const daemon = bytes.toString('latin1');
    // Names survive the minification: each command module's register function is there or not.
    for (const name of [register[d], 'programFrame']) assert.match(daemon, new RegExp(`\\b${name}\\b`), `${name} in ${d}.cjs`);
    const other = d === 'speaker' ? 'controller' : 'speaker';
    for (const name of [
      register[other],
      'registerExplain',
      'registerWhois',
      'registerValidate',
      'registerAllocate',
      'registerWhatIf',
      'registerSnapshot',
      'registerMembers',
      'registerCompletion',
      'buildCommandProgram',
    ]) {
      assert.match(cli, new RegExp(`\\b${name}\\b`), `${name} in cli.cjs`);
      assert.doesNotMatch(daemon, new RegExp(`\\b${name}\\b`), `${name} in ${d}.cjs`);
    }
    // prom-client's exemplars (never enabled) would bring the OpenTelemetry API into every bundle
    assert.ok(!daemon.includes(OTEL_MARK), `the OpenTelemetry API in ${d}.cjs`);
    assert.ok(bytes.length < cli.length / 2, `${d}.cjs ${bytes.length} bytes, cli.cjs ${cli.length}`);
    ids.add(buildIdOf(daemonStarter(d)));
  }
  assert.ok(!cli.includes(OTEL_MARK), 'the OpenTelemetry API in cli.cjs');
  assert.equal(ids.size, 3, 'each bundle has its own build id');
});

test('bin/metallb-ts runs each daemon from its bundle, which prints what src/cli.ts prints; each bundle keeps its own code cache', () => {
  const dir = join(cache, 'metallb-ts-bundle');
  rmSync(dir, { recursive: true, force: true });
  for (const [d, id] of [
    ['speaker', buildIdOf(daemonStarter('speaker'))],
    ['controller', buildIdOf(daemonStarter('controller'))],
    ['explain', buildIdOf(STARTER)],
  ] as const) {
    const r = run(BIN, d === 'explain' ? ['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE] : [d, '--help']);
    assert.equal(r.status, 0, r.stderr);
    // The starter that ran wrote its code cache, named by its bundle's build; the other's is kept.
    const files = readdirSync(dir).filter((f) => f.endsWith(`-${d}`));
    assert.equal(files.length, 1, readdirSync(dir).join(', '));
    assert.match(files[0]!, new RegExp(`^[0-9a-f]+-${id}-`), `${d} ran the other bundle`);
  }
  assert.equal(readdirSync(dir).length, 3, readdirSync(dir).join(', '));

  const twice = join(copy, 'node-twice.yaml');
  writeFileSync(twice, 'apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: {a: b}\n');
  const cases: [Daemon, ...string[]][] = [
    ['speaker', '--help'],
    ['controller', '--help'],
    ['speaker', '--no-such-flag'],
    ['controller', '--log-level', 'loud'],
    ['speaker', '--node-name', 'n1', '--port', 'x'],
    ['speaker', '--node-name', 'n1', '--dry-run', '-f', twice],
  ];
  for (const a of cases) {
    const src = run(NODE, [join(copy, 'src/cli.ts'), ...a]);
    assert.deepEqual(run(NODE, [daemonStarter(a[0]), ...a]), src, `metallb-ts ${a.join(' ')}`);
    assert.ok(src.stdout.length > 0 || src.stderr.length > 0, `metallb-ts ${a.join(' ')} printed nothing`);
  }
  // the snapshot's warning, one line, from the bundle too (which loads kube/snapshot.ts only then)
  assert.match(
    run(NODE, [daemonStarter('speaker'), 'speaker', '--node-name', 'n1', '--dry-run', '-f', twice]).stderr,
    /^metallb-ts: warning: Node n1 is defined twice in the input, with different contents .*\n$/,
  );
  // Any other command, or the other daemon, is not in it: one line, exit 2.
  for (const [d, a] of [
    ['speaker', 'explain'],
    ['controller', 'explain'],
    ['speaker', 'controller'],
    ['controller', 'speaker'],
  ] as const) {
    const other = run(NODE, [daemonStarter(d), a, '--help']);
    assert.equal(other.status, 2, `${d}'s bundle ran ${a}`);
    assert.equal(other.stderr, `metallb-ts: the ${d}'s bundle runs \`${d}\` only, not "${a}"; run bin/metallb-ts\n`);
  }
});

test("bin/metallb-ts gives the speaker glibc's malloc tunables (unless the caller set its own), not the controller or the CLI", () => {
  const preload = join(copy, 'print-tunables.cjs');
  writeFileSync(preload, 'process.stderr.write("GLIBC_TUNABLES=" + (process.env.GLIBC_TUNABLES ?? "(unset)") + "\\n");\n');
  const tunables = (args: string[], extra: Record<string, string> = {}): string => {
    const r = run(BIN, args, { NODE_OPTIONS: `--require ${preload}`, ...extra });
    assert.equal(r.status, 0, r.stderr);
    return /^GLIBC_TUNABLES=(.*)$/m.exec(r.stderr)?.[1] ?? 'not printed';
  };
  const caller = process.env['GLIBC_TUNABLES'];
  assert.equal(tunables(['speaker', '--help']), caller ?? 'glibc.malloc.trim_threshold=0:glibc.malloc.top_pad=0:glibc.malloc.arena_max=1');
  assert.equal(tunables(['speaker', '--help'], { GLIBC_TUNABLES: 'glibc.malloc.arena_max=4' }), 'glibc.malloc.arena_max=4');
  assert.equal(tunables(['controller', '--help']), caller ?? '(unset)');
  assert.equal(tunables(['--version']), caller ?? '(unset)');
});
