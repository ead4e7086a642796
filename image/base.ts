/**
 * The image's base: the few files of this machine's Debian that Node and the addon need to run —
 * the dynamic loader and the shared libraries `ldd` names for node, l2.node, /bin/sh and readlink
 * (glibc, libstdc++, libgcc_s), the shell (bin/metallb-ts is a sh script) and readlink (its
 * `readlink -f`) — plus /etc/passwd and /etc/group with root and nobody, /etc/nsswitch.conf, /tmp.
 *
 * Each host path is copied as the host has it, symlinks included (on merged-/usr Debian /lib64 is
 * a symlink to usr/lib64, libstdc++.so.6 to libstdc++.so.6.0.30, /bin/sh to dash), so the loader
 * and the libraries are found where the binaries' ELF headers and glibc's default paths say.
 * No CA certificates: the in-cluster API server's CA comes from the service account mount (or the
 * kubeconfig), and Node carries Mozilla's root store compiled in for anything else. No tzdata
 * (logs are UTC), no package manager, no npm.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { posix } from 'node:path';
import { TMP_MODE } from './layout.ts';
import type { TarEntry } from './tar.ts';

/** The shell and tools from the host that bin/metallb-ts uses. */
export const HOST_PROGRAMS = ['/bin/sh', '/usr/bin/readlink'];

/**
 * The entries that bring `path` (absolute, on the host) into the image as the host has it: every
 * symlink met on the way (a directory component or the file itself), then the file. Paths in the
 * entries are relative to / ('usr/lib/x86_64-linux-gnu/libc.so.6').
 */
export function hostPathEntries(path: string): TarEntry[] {
  const out: TarEntry[] = [];
  let rest = path.split('/').filter(Boolean);
  let cur = '';
  for (let guard = 0; rest.length > 0; guard++) {
    if (guard > 64) throw new Error(`${path}: too many symlinks`);
    const next = `${cur}/${rest[0]}`;
    const st = lstatSync(next);
    if (st.isSymbolicLink()) {
      const target = readlinkSync(next);
      out.push({ type: 'symlink', path: next.slice(1), target });
      const resolved = target.startsWith('/') ? target : posix.join(cur || '/', target);
      rest = [...resolved.split('/').filter(Boolean), ...rest.slice(1)];
      cur = '';
      continue;
    }
    if (rest.length === 1) {
      if (!st.isFile()) throw new Error(`${path}: ${next} is not a regular file`);
      out.push({ type: 'file', path: next.slice(1), mode: normalMode(st.mode), size: st.size, source: { file: next } });
    } else if (!st.isDirectory()) {
      throw new Error(`${path}: ${next} is not a directory`);
    }
    cur = next;
    rest = rest.slice(1);
  }
  return out;
}

/** 0755 for anything executable, else 0644: the image does not carry the host's or npm's modes. */
export function normalMode(mode: number): number {
  return mode & 0o111 ? 0o755 : 0o644;
}

/** The shared libraries and the loader that `ldd` lists for `binaries` (absolute host paths, deduplicated). */
export function sharedLibraries(binaries: readonly string[]): string[] {
  const libs = new Set<string>();
  for (const bin of binaries) {
    let out: string;
    try {
      out = execFileSync('ldd', [bin], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      // ldd exits 1 for a static binary ("not a dynamic executable"): nothing to copy then.
      if (/not a dynamic executable|statically linked/.test(`${e.stdout ?? ''}${e.stderr ?? ''}`)) continue;
      throw new Error(`ldd ${bin} failed: ${(e.stderr ?? String(err)).trim()}`);
    }
    for (const line of out.split('\n')) {
      if (/not found/.test(line)) throw new Error(`ldd ${bin}: ${line.trim()} (that library is missing on this machine)`);
      const m = /=>\s*(\/\S+)\s*\(/.exec(line) ?? /^\s*(\/\S+)\s*\(/.exec(line);
      if (m) libs.add(m[1]!);
    }
  }
  return [...libs].sort();
}

/**
 * The Debian packages (name and version) the host files come from, for the image's label
 * (`dpkg -S` then `dpkg-query`); empty where dpkg is not there.
 */
export function debianPackages(paths: readonly string[]): string[] {
  // The path as named, its real file, and each with and without /usr: on merged-/usr Debian dpkg
  // knows a file under the name its package shipped it (/bin/dash, /usr/lib/…/libstdc++.so.6.0.30).
  const alias = (p: string): string => (p.startsWith('/usr/') ? p.slice(4) : `/usr${p}`);
  const candidates = [...new Set(paths.flatMap((p) => [p, realpathSync(p)]).flatMap((p) => [p, alias(p)]))];
  // One dpkg -S for all (it reads every package's file list once); it exits 1 when some path is
  // in no package, and still prints the ones it found.
  const r = spawnSync('dpkg', ['-S', ...candidates], { encoding: 'utf8' });
  if (r.error || typeof r.stdout !== 'string') return [];
  const names = new Set<string>();
  for (const line of r.stdout.split('\n')) {
    const m = /^([^:,\s]+)(?::[^:\s]+)?(?:, [^:]*)?: /.exec(line);
    if (m) names.add(m[1]!);
  }
  if (names.size === 0) return [];
  const q = spawnSync('dpkg-query', ['-W', '-f', '${Package} ${Version}\n', ...[...names].sort()], { encoding: 'utf8' });
  if (q.error || q.status !== 0) return [];
  return q.stdout.split('\n').filter(Boolean).sort();
}

/** The generated /etc files: root and nobody (65534, as deploy/controller.yaml runs it), hosts from files then DNS. */
export function etcFiles(): TarEntry[] {
  const file = (path: string, text: string): TarEntry => {
    const bytes = Buffer.from(text, 'utf8');
    return { type: 'file', path, mode: 0o644, size: bytes.length, source: { bytes } };
  };
  return [
    file('etc/passwd', 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n'),
    file('etc/group', 'root:x:0:\nnogroup:x:65534:\n'),
    file('etc/nsswitch.conf', 'passwd: files\ngroup: files\nhosts: files dns\n'),
  ];
}

/** The base layer's entries (without parent directories; the layer builder adds them). */
export function baseEntries(binaries: readonly string[]): { entries: TarEntry[]; hostFiles: string[] } {
  const programs = HOST_PROGRAMS.map((p) => {
    if (!statSync(p, { throwIfNoEntry: false })) throw new Error(`${p} is missing on this machine (bin/metallb-ts needs a shell and readlink)`);
    return p;
  });
  const libs = sharedLibraries([...binaries, ...programs.map((p) => realpathSync(p))]);
  const hostFiles = [...programs, ...libs];
  const entries: TarEntry[] = [];
  for (const p of hostFiles) entries.push(...hostPathEntries(p));
  entries.push(...etcFiles());
  entries.push({ type: 'dir', path: 'tmp', mode: TMP_MODE });
  entries.push({ type: 'dir', path: 'root', mode: 0o700 });
  return { entries, hostFiles };
}
