/**
 * The pieces of `npm run image` that need no build: the reproducible tar writer (read back by our
 * reader and by GNU tar), what image/prune.ts leaves out of node_modules and why, and how a host
 * path with symlinks on the way is copied into the base layer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readTar, tarStream, type TarEntry } from '../../image/tar.ts';
import { entryPoints, pruneReason, pruneTree } from '../../image/prune.ts';
import { hostPathEntries, normalMode } from '../../image/base.ts';
import { sortEntries, withParents } from '../../image/oci.ts';

async function tarBytes(entries: TarEntry[], mtime: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of tarStream(entries, mtime)) chunks.push(c);
  return Buffer.concat(chunks);
}

/** Over 100 bytes: split into ustar's prefix and name fields. */
const long = `opt/metallb-ts/node_modules/${'@scope/'.repeat(3)}${'a-rather-long-directory-name/'.repeat(5)}file.js`;
/** A last component over 100 bytes: no ustar split fits, so a PAX `path` record. */
const longName = `opt/${'x'.repeat(120)}.js`;
const bytes = (s: string): { bytes: Buffer } => ({ bytes: Buffer.from(s) });

test('tar: ustar with PAX paths, read back as written, and by GNU tar', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-image-tar-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'host-file'), 'from disk\n');
  const entries = sortEntries(
    withParents([
      { type: 'file', path: 'etc/passwd', mode: 0o644, size: 5, source: bytes('root\n') },
      { type: 'file', path: 'usr/local/bin/node', mode: 0o755, size: 10, source: { file: join(dir, 'host-file') } },
      { type: 'symlink', path: 'lib64', target: 'usr/lib64' },
      { type: 'symlink', path: 'opt/far', target: `/${'t'.repeat(150)}` },
      { type: 'dir', path: 'tmp', mode: 0o1777 },
      { type: 'file', path: long, mode: 0o644, size: 2, source: bytes('{}') },
      { type: 'file', path: longName, mode: 0o644, size: 0, source: bytes('') },
    ]),
  );
  const a = await tarBytes(entries, 1234567890);
  assert.ok(a.equals(await tarBytes(entries, 1234567890)), 'the same entries give the same bytes');
  assert.equal(a.length % 512, 0);

  const read = readTar(a);
  assert.deepEqual(
    read.map((e) => e.path),
    entries.map((e) => (e.type === 'dir' ? `${e.path}/` : e.path)),
  );
  for (const e of read) {
    assert.equal(e.uid, 0);
    assert.equal(e.gid, 0);
    assert.equal(e.uname, '');
    assert.equal(e.gname, '');
    assert.equal(e.mtime, 1234567890);
  }
  const by = new Map(read.map((e) => [e.path, e]));
  assert.equal(by.get('usr/local/bin/node')!.data.toString(), 'from disk\n');
  assert.equal(by.get('usr/local/bin/node')!.mode, 0o755);
  assert.equal(by.get('tmp/')!.mode, 0o1777);
  assert.equal(by.get('usr/')!.type, 'dir', 'parents are added');
  assert.equal(by.get('lib64')!.linkname, 'usr/lib64');
  assert.equal(by.get('opt/far')!.linkname, `/${'t'.repeat(150)}`);
  assert.equal(by.get(long)!.data.toString(), '{}');
  assert.ok(by.has(longName));

  const tarFile = join(dir, 'x.tar');
  writeFileSync(tarFile, a);
  const gnu = spawnSync('tar', ['-tvf', tarFile, '--numeric-owner', '--full-time'], { encoding: 'utf8' });
  if (gnu.error) return t.skip('no tar on this machine');
  assert.equal(gnu.status, 0, gnu.stderr);
  const lines = gnu.stdout.trim().split('\n');
  assert.equal(lines.length, entries.length);
  assert.ok(
    lines.some((l) => l.endsWith(` ${long}`)),
    'GNU tar reads the PAX path',
  );
  assert.ok(
    lines.some((l) => l.includes(`opt/far -> /${'t'.repeat(150)}`)),
    'GNU tar reads the PAX linkpath',
  );
  for (const l of lines) assert.match(l, / 0\/0 /, 'numeric owner 0/0');
});

test('tar: one path given twice with different contents is an error', () => {
  assert.throws(
    () =>
      sortEntries([
        { type: 'file', path: 'a', mode: 0o644, size: 1, source: bytes('x') },
        { type: 'file', path: 'a', mode: 0o644, size: 1, source: bytes('y') },
      ]),
    /two different entries for \/a/,
  );
});

test('prune: what Node never loads is left out, code and licenses stay', () => {
  const cases: [path: string, isDir: boolean, reason: string | null][] = [
    ['@kubernetes/client-node/dist/api.d.ts', false, 'type declarations'],
    ['@opentelemetry/api/build/index.d.mts', false, 'type declarations'],
    ['@kubernetes/client-node/dist/api.js.map', false, 'source maps'],
    ['@opentelemetry/api/dist/index.d.cts.map', false, 'source maps'],
    ['undici/README.md', false, 'documentation'],
    ['bare-url/prebuilds/linux-x64/bare-url.bare', false, 'Bare runtime addons'],
    ['bare-fs/binding.c', false, 'C sources'],
    ['bare-fs/CMakeLists.txt', false, 'C sources'],
    ['hasown/.eslintrc', false, 'tooling'],
    ['some/tsconfig.json', false, 'tooling'],
    ['bintrees/test', true, 'tests'],
    ['undici/docs', true, 'documentation'],
    ['@colors/colors/examples', true, 'documentation'],
    ['a/node_modules/b/test', true, 'tests'],
    ['hpagent/.github', true, 'tooling'],
    ['.bin', true, 'npm bookkeeping'],
    ['@kubernetes/client-node/node_modules/.bin', true, 'npm bookkeeping'],
    ['.package-lock.json', false, 'npm bookkeeping'],
    // Stays:
    ['@kubernetes/client-node/dist/api.js', false, null],
    ['yaml/dist/doc', true, null], // code: only a package's top-level docs/ is documentation
    ['rfc4648/lib/test', true, null], // not at the package's top level
    ['@kubernetes', true, null], // a scope, not a package
    ['commander/LICENSE', false, null],
    ['some/LICENSE.md', false, null],
    ['js-yaml/package.json', false, null],
    ['mime-db/db.json', false, null],
    ['ws/lib/websocket.js', false, null],
  ];
  for (const [path, isDir, reason] of cases) assert.equal(pruneReason(path, isDir), reason, path);
});

test('prune: a file a package.json names as an entry point stays even when a rule matches it', (t) => {
  const nm = mkdtempSync(join(tmpdir(), 'metallb-ts-image-prune-'));
  t.after(() => rmSync(nm, { recursive: true, force: true }));
  const file = (p: string, s = 'x'): void => {
    mkdirSync(join(nm, p, '..'), { recursive: true });
    writeFileSync(join(nm, p), s);
  };
  file('odd/package.json', JSON.stringify({ main: 'docs/index.js', exports: { '.': { types: './x.d.ts', default: './docs/index.js' }, './readme': './README.md' } }));
  file('odd/docs/index.js');
  file('odd/x.d.ts');
  file('odd/README.md');
  file('plain/package.json', '{}');
  file('plain/index.js');
  file('plain/index.d.ts');
  file('plain/test/a.js');
  assert.ok(entryPoints(nm).has('odd/README.md'));
  const { kept, dropped } = pruneTree(nm);
  const keptPaths = kept.map((e) => e.rel);
  assert.ok(keptPaths.includes('odd/README.md'), 'named by exports');
  assert.ok(keptPaths.includes('plain/index.js'));
  assert.ok(keptPaths.includes('odd/docs/index.js'), 'a directory holding an entry point stays');
  assert.deepEqual(
    dropped.map((d) => [d.rel, d.reason]).sort(),
    [
      ['odd/x.d.ts', 'type declarations'],
      ['plain/index.d.ts', 'type declarations'],
      ['plain/test', 'tests'],
    ].sort(),
  );
});

test('base: a host path is copied with every symlink on the way, modes normalized', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-image-base-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'usr/lib/x86_64-linux-gnu'), { recursive: true });
  writeFileSync(join(dir, 'usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30'), 'lib');
  symlinkSync('libstdc++.so.6.0.30', join(dir, 'usr/lib/x86_64-linux-gnu/libstdc++.so.6'));
  symlinkSync('usr/lib', join(dir, 'lib'));
  const entries = hostPathEntries(join(dir, 'lib/x86_64-linux-gnu/libstdc++.so.6'));
  const rel = (p: string): string => p.slice(dir.length); // the temp dir's own path stays as a prefix
  assert.deepEqual(
    entries.map((e) => [e.type, rel(`/${e.path}`), e.type === 'symlink' ? e.target : e.type === 'file' ? e.mode : null]),
    [
      ['symlink', '/lib', 'usr/lib'],
      ['symlink', '/usr/lib/x86_64-linux-gnu/libstdc++.so.6', 'libstdc++.so.6.0.30'],
      ['file', '/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30', 0o644],
    ],
  );
  assert.equal(normalMode(0o700), 0o755);
  assert.equal(normalMode(0o600), 0o644);
});
