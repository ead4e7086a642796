// The image's compile cache (image/compile-cache.ts): built with each daemon's V8 flags, renamed for
// the daemon's user, stripped TypeScript only, and read from a moved copy without stripping again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCompileCache, COMPILE_CACHE_DIR, daemonNodeFlags, nodeFlagSets } from '../../image/compile-cache.ts';

const ROOT = join(import.meta.dirname, '../..');
const BIN = readFileSync(join(ROOT, 'bin/metallb-ts'), 'utf8');

test('daemonNodeFlags: the V8 flags bin/metallb-ts gives each daemon', () => {
  const flags = daemonNodeFlags(BIN);
  assert.ok(flags.speaker.includes('--max-semi-space-size=1') && flags.speaker.includes('--no-opt'), flags.speaker.join(' '));
  assert.ok(flags.controller.includes('--optimize-for-size') && flags.controller.includes('--no-opt'), flags.controller.join(' '));
  assert.deepEqual(
    nodeFlagSets(
      'case ${1-} in\n  speaker) exec "$node" --a "$root/src/cli.ts" "$@" ;;\n  controller) exec "$node" --a "$root/src/cli.ts" "$@" ;;\n'
        + '  explain) exec "$node" --b=1 "$root/src/cli.ts" "$@" ;;\nesac\nexec "$node" "$root/src/cli.ts" "$@"\n',
    ),
    [['--a'], ['--b=1'], []],
  );
  assert.deepEqual(daemonNodeFlags('case ${1-} in\n  speaker | controller) exec "$node" --a --b "$root/src/cli.ts" "$@" ;;\nesac'), { speaker: ['--a', '--b'], controller: ['--a', '--b'] });
  assert.throws(() => daemonNodeFlags('exec "$node" "$root/src/cli.ts" "$@"'), /no `speaker\) exec/);
});

test('buildCompileCache: one directory per daemon and user, stripped TypeScript only, used from a moved copy', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-compile-cache-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const app = join(dir, 'build/app');
  mkdirSync(join(app, 'bin'), { recursive: true });
  mkdirSync(join(app, 'src/core'), { recursive: true });
  writeFileSync(join(app, 'bin/metallb-ts'), BIN);
  writeFileSync(join(app, 'src/core/a.ts'), 'export const answer: number = 42;\nexport type T = { a: string };\n');
  writeFileSync(join(app, 'src/cli.ts'), "import { answer } from './core/a.ts';\nif (process.argv.includes('--version')) console.log(String(answer));\n");
  const cache = buildCompileCache({ node: process.execPath, app });
  assert.equal(cache, join(app, COMPILE_CACHE_DIR));
  const dirs = readdirSync(cache).sort();
  const ofUser = (uid: number): string[] => dirs.filter((d) => d.startsWith(`v${process.versions.node}-`) && d.endsWith(`-${uid}`));
  // one per set of flags V8 tells apart (it does not hash heap sizes), as root
  assert.ok(ofUser(0).length >= 1 && ofUser(0).length <= nodeFlagSets(BIN).length, `root's in ${dirs.join(', ')}`);
  assert.deepEqual(
    ofUser(65534).map((d) => d.replace(/-\d+$/, '')),
    ofUser(0).map((d) => d.replace(/-\d+$/, '')),
    `the same for nobody in ${dirs.join(', ')}`,
  );
  // only the two modules' stripped code in each (V8's code caches differ from build to build)
  for (const d of dirs) assert.equal(readdirSync(join(cache, d)).length, 2, d);

  const moved = join(dir, 'elsewhere/app');
  cpSync(app, moved, { recursive: true });
  const flags = daemonNodeFlags(BIN);
  for (const [name, f] of [['speaker', flags.speaker], ['controller', flags.controller], ...nodeFlagSets(BIN).map((x) => [x.join(' ') || 'no flags', x] as const)]) {
    const r = spawnSync(process.execPath, [...f, join(moved, 'src/cli.ts'), '--version'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, NODE_COMPILE_CACHE: join(moved, COMPILE_CACHE_DIR), NODE_COMPILE_CACHE_PORTABLE: '1', NODE_DEBUG_NATIVE: 'COMPILE_CACHE' },
    });
    assert.equal(r.stdout.trim(), '42', `${name}: ${r.stderr}`);
    if (process.getuid?.() !== 0) continue; // the directories are named for root and nobody
    for (const m of ['src/cli.ts', 'src/core/a.ts']) {
      assert.match(r.stderr, new RegExp(`retrieving transpile cache for StrippedTypeScript \\S*elsewhere/app/${m}\\.\\.\\.success`), `${name}: ${m} not stripped again`);
    }
  }
});
