/**
 * The files MetalLB's speaker reads for memberlist: the secret key (`--ml-secret-key-path`) and the
 * optional memberlist config file, and MetalLB's rule for turning memberlist on.
 */
import { closeSync, constants as fsConstants, fstatSync, openSync, readFileSync, readSync, statSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../core/errors.ts';
import { parseMemberlistConfigFile, type MemberlistFileResult } from '../core/membership/config.ts';
import { metallbSecretKey } from '../core/membership/crypto.ts';

/**
 * The memberlist key as MetalLB v0.16.1's speaker gets it: the file `secretkey` under
 * `--ml-secret-key-path`, read as is (no trimming; a trailing newline is part of the secret),
 * then `metallbSecretKey`. Returns null for an empty secret (MetalLB then runs unencrypted and
 * warns). Throws (MetalLB exits 1) when the file cannot be read.
 */
export function readMemberlistKey(secretKeyPath: string): Uint8Array | null {
  const secret = new Uint8Array(readFileSync(join(secretKeyPath, 'secretkey')));
  return secret.length === 0 ? null : metallbSecretKey(secret);
}

/** MetalLB turns memberlist on only when both `--ml-bindaddr` and `--ml-labels` are set. */
export function memberlistEnabled(bindAddr: string | undefined, labels: string | undefined): boolean {
  return Boolean(bindAddr) && Boolean(labels);
}

/** The largest memberlist config file read: 1 MiB (MetalLB's has 19 short fields: a few hundred bytes). */
export const MAX_MEMBERLIST_CONFIG_BYTES = 1024 * 1024;

function fileKind(st: Stats): string {
  return st.isDirectory() ? 'a directory' : st.isFIFO() ? 'a FIFO' : st.isCharacterDevice() ? 'a character device' : st.isBlockDevice() ? 'a block device' : st.isSocket() ? 'a socket' : 'not a regular file';
}

/**
 * MetalLB's optional memberlist config file (speakerlist.go tryToLoadMemberListConfig): null when
 * `path` does not exist (ENOENT, as Go's os.IsNotExist: memberlist's defaults apply; the caller
 * logs that); otherwise calls `onLoading(path)` (MetalLB logs "loading memberlist config from
 * file" there) and parses it with parseMemberlistConfigFile, returning the config and its
 * warnings (unknown fields, which MetalLB ignores silently).
 *
 * Unlike MetalLB's os.ReadFile, `path` (symlinks followed, as a ConfigMap mount has them) must be a
 * regular file of at most MAX_MEMBERLIST_CONFIG_BYTES: a directory, FIFO or device (`/dev/zero`,
 * which would read without end; a FIFO, which would block the speaker) is refused before it is
 * opened. Throws InputError (exit 2, one line naming the file) when the file is not a regular file,
 * is too large, cannot be read (no permission…) or is invalid; MetalLB's speaker stops then too.
 */
export function readMemberlistConfigFile(path: string, onLoading?: (path: string) => void): MemberlistFileResult | null {
  const cannot = (why: string): never => {
    throw new InputError(path, `cannot read the memberlist config file: ${why}`);
  };
  const tooLarge = `larger than ${MAX_MEMBERLIST_CONFIG_BYTES} bytes (1 MiB)`;
  let st: Stats;
  try {
    st = statSync(path);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ENOENT') return null;
    return cannot(err.code ?? err.message);
  }
  if (!st.isFile()) cannot(`${fileKind(st)}, not a regular file`);
  if (st.size > MAX_MEMBERLIST_CONFIG_BYTES) cannot(tooLarge);
  let text: string;
  let fd: number | null = null;
  try {
    // O_NONBLOCK: should the path have become a FIFO since the stat, opening it must not block.
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const st2 = fstatSync(fd);
    if (!st2.isFile()) cannot(`${fileKind(st2)}, not a regular file`);
    const buf = Buffer.alloc(MAX_MEMBERLIST_CONFIG_BYTES + 1);
    let size = 0;
    for (;;) {
      const n = readSync(fd, buf, size, buf.length - size, null);
      if (n === 0) break;
      size += n;
      if (size > MAX_MEMBERLIST_CONFIG_BYTES) cannot(tooLarge); // grown since the stat
    }
    text = buf.subarray(0, size).toString('utf8');
  } catch (e) {
    if (e instanceof InputError) throw e;
    const err = e as NodeJS.ErrnoException;
    return cannot(err.code ?? err.message);
  } finally {
    if (fd !== null) closeSync(fd);
  }
  onLoading?.(path);
  return parseMemberlistConfigFile(text, path);
}
