/**
 * A reproducible tar writer (and a small reader for the tests), for the image's layers and the OCI
 * archive around them. Every entry is written with uid/gid 0, no user or group names, one fixed
 * mtime and a normalized mode; entries are written in the order given (the caller sorts them).
 * Format: POSIX ustar, with a PAX extended header (`path=`, `linkpath=`) for a name or link target
 * that does not fit the ustar fields, as GNU tar, Go's archive/tar (containerd) and Docker read it.
 */
import { closeSync, openSync, readSync } from 'node:fs';

/** One entry of a layer: a directory, a regular file (its bytes, or a host file to stream) or a symlink. */
export type TarEntry =
  | { type: 'dir'; path: string; mode: number }
  | { type: 'file'; path: string; mode: number; size: number; source: { bytes: Buffer } | { file: string } }
  | { type: 'symlink'; path: string; target: string };

const BLOCK = 512;
const ZERO = Buffer.alloc(BLOCK);

/** The bytes of a ustar header, or throws when a numeric field does not fit (a file >= 8 GiB). */
function header(name: string, prefix: string, mode: number, size: number, mtime: number, typeflag: string, linkname: string): Buffer {
  const h = Buffer.alloc(BLOCK);
  const str = (s: string, offset: number, len: number): void => {
    const b = Buffer.from(s, 'utf8');
    if (b.length > len) throw new Error(`tar: field too long (${len}): ${s}`);
    b.copy(h, offset);
  };
  const oct = (n: number, offset: number, len: number): void => {
    const s = n.toString(8).padStart(len - 1, '0');
    if (s.length > len - 1) throw new Error(`tar: number too large for a ${len}-byte field: ${n}`);
    str(s, offset, len - 1); // NUL-terminated
  };
  str(name, 0, 100);
  oct(mode, 100, 8);
  oct(0, 108, 8); // uid
  oct(0, 116, 8); // gid
  oct(size, 124, 12);
  oct(mtime, 136, 12);
  h.fill(0x20, 148, 156); // checksum computed over spaces
  str(typeflag, 156, 1);
  str(linkname, 157, 100);
  str('ustar', 257, 6); // magic "ustar\0"
  str('00', 263, 2); // version
  // uname, gname (265, 297) empty; devmajor/devminor (329, 337) zero.
  oct(0, 329, 8);
  oct(0, 337, 8);
  str(prefix, 345, 155);
  let sum = 0;
  for (const byte of h) sum += byte;
  str(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8);
  return h;
}

/** Splits `path` into ustar's prefix (155 bytes) and name (100 bytes), or null when it cannot. */
function splitUstar(path: string): [prefix: string, name: string] | null {
  if (Buffer.byteLength(path) <= 100) return ['', path];
  // The split must be at a '/', with the name part non-empty and both parts within their limits.
  for (let i = path.indexOf('/'); i >= 0; i = path.indexOf('/', i + 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100 && name !== '') return [prefix, name];
  }
  return null;
}

/** A PAX record "LEN key=value\n", LEN counting itself. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
  return `${len}${body}`;
}

const pad = (size: number): Buffer => ZERO.subarray(0, (BLOCK - (size % BLOCK)) % BLOCK);

/** The header block(s) of one entry: a PAX header first when the path or link target needs it. */
export function entryHeader(e: TarEntry, mtime: number): Buffer {
  const path = e.type === 'dir' ? `${e.path.replace(/\/$/, '')}/` : e.path;
  const linkname = e.type === 'symlink' ? e.target : '';
  const mode = e.type === 'symlink' ? 0o777 : e.mode;
  const size = e.type === 'file' ? e.size : 0;
  const flag = e.type === 'dir' ? '5' : e.type === 'symlink' ? '2' : '0';
  const split = splitUstar(path);
  const out: Buffer[] = [];
  let records = '';
  if (!split) records += paxRecord('path', path);
  if (Buffer.byteLength(linkname) > 100) records += paxRecord('linkpath', linkname);
  if (records) {
    const body = Buffer.from(records, 'utf8');
    // The PAX header's own name is informational; a short fixed one keeps it within ustar.
    out.push(header('PaxHeader', '', 0o644, body.length, mtime, 'x', ''), body, pad(body.length));
  }
  const [prefix, name] = split ?? ['', path.slice(0, 100)];
  out.push(header(name, prefix, mode, size, mtime, flag, Buffer.byteLength(linkname) > 100 ? '' : linkname));
  return Buffer.concat(out);
}

/**
 * The tar stream of `entries` in their order, as chunks: headers, contents (host files read in
 * 1 MiB pieces, so a 100 MB binary is never held whole), padding and the two closing zero blocks.
 */
export async function* tarStream(entries: readonly TarEntry[], mtime: number): AsyncGenerator<Buffer> {
  for (const e of entries) {
    yield entryHeader(e, mtime);
    if (e.type !== 'file') continue;
    if ('bytes' in e.source) {
      if (e.source.bytes.length !== e.size) throw new Error(`tar: ${e.path}: size ${e.size} but ${e.source.bytes.length} bytes`);
      yield e.source.bytes;
    } else {
      const fd = openSync(e.source.file, 'r');
      try {
        let done = 0;
        while (done < e.size) {
          const chunk = Buffer.allocUnsafe(Math.min(1 << 20, e.size - done));
          const n = readSync(fd, chunk, 0, chunk.length, done);
          if (n === 0) throw new Error(`tar: ${e.source.file} shrank while being read (${done} of ${e.size} bytes)`);
          done += n;
          yield n === chunk.length ? chunk : chunk.subarray(0, n);
        }
      } finally {
        closeSync(fd);
      }
    }
    const p = pad(e.size);
    if (p.length) yield p;
  }
  yield Buffer.alloc(2 * BLOCK);
}

/** One entry as read back (tests): the resolved path (PAX applied), type flag, mode, owner, mtime, size. */
export interface ReadEntry {
  path: string;
  type: 'dir' | 'file' | 'symlink' | 'other';
  mode: number;
  uid: number;
  gid: number;
  uname: string;
  gname: string;
  mtime: number;
  size: number;
  linkname: string;
  data: Buffer;
}

/** Parses an uncompressed tar (ustar + PAX `path`/`linkpath`), for checking what the writer wrote. */
export function readTar(buf: Buffer): ReadEntry[] {
  const out: ReadEntry[] = [];
  const cstr = (b: Buffer): string => {
    const i = b.indexOf(0);
    return b.subarray(0, i < 0 ? b.length : i).toString('utf8');
  };
  const num = (b: Buffer): number => {
    const s = cstr(b).trim();
    return s === '' ? 0 : parseInt(s, 8);
  };
  let off = 0;
  let pax: Record<string, string> = {};
  while (off + BLOCK <= buf.length) {
    const h = buf.subarray(off, off + BLOCK);
    if (h.equals(ZERO)) break;
    const size = num(h.subarray(124, 136));
    const flag = String.fromCharCode(h[156]!);
    const data = buf.subarray(off + BLOCK, off + BLOCK + size);
    off += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    if (flag === 'x') {
      pax = {};
      for (let p = 0; p < data.length; ) {
        const sp = data.indexOf(0x20, p);
        const len = Number(data.subarray(p, sp).toString('ascii'));
        const kv = data.subarray(sp + 1, p + len - 1).toString('utf8');
        const eq = kv.indexOf('=');
        pax[kv.slice(0, eq)] = kv.slice(eq + 1);
        p += len;
      }
      continue;
    }
    const prefix = cstr(h.subarray(345, 500));
    const name = cstr(h.subarray(0, 100));
    out.push({
      path: pax.path ?? (prefix ? `${prefix}/${name}` : name),
      type: flag === '5' ? 'dir' : flag === '0' || flag === '\0' ? 'file' : flag === '2' ? 'symlink' : 'other',
      mode: num(h.subarray(100, 108)),
      uid: num(h.subarray(108, 116)),
      gid: num(h.subarray(116, 124)),
      uname: cstr(h.subarray(265, 297)),
      gname: cstr(h.subarray(297, 329)),
      mtime: num(h.subarray(136, 148)),
      size,
      linkname: pax.linkpath ?? cstr(h.subarray(157, 257)),
      data,
    });
    pax = {};
  }
  return out;
}
