/**
 * LZW as Go's `compress/lzw` with LSB bit order and 8-bit literals (the GIF variant), which
 * memberlist's compress message (type 9, `Algo` 0) carries. `lzwEncode` output is byte-identical
 * to `lzw.NewWriter(w, lzw.LSB, 8)` + one `Write` + `Close`: a clear code first, codes from 258,
 * widths 9→12 growing when the next code reaches 512/1024/2048, clear + restart when it would
 * reach 4095, the counter advanced once after the last code, then end (257), zero-padded.
 */

/** A corrupt or truncated LZW stream, or one whose output exceeds the caller's limit. */
export class LzwError extends Error {
  override name = 'LzwError';
  /**
   * Bytes the decoder had written when it failed (set by lzwDecode): the work a corrupt stream
   * cost, which a caller's decompression allowance must be charged like a success's output.
   */
  outputBytes = 0;
}

/** The output would exceed the caller's `maxOutputBytes` (a decompression bomb, or a budget spent). */
export class LzwLimitError extends LzwError {
  override name = 'LzwLimitError';
}

const CLEAR = 256;
const EOF = 257;
const MAX_CODE = 4095;

/** Compresses `input` exactly as Go's compress/lzw (LSB, literal width 8) does. */
export function lzwEncode(input: Uint8Array): Uint8Array {
  const out: number[] = [];
  let bits = 0;
  let nBits = 0;
  let width = 9;
  let hi = EOF;
  let overflow = 512;
  const write = (c: number): void => {
    bits |= c << nBits;
    nBits += width;
    while (nBits >= 8) {
      out.push(bits & 0xff);
      bits >>>= 8;
      nBits -= 8;
    }
  };
  let table = new Map<number, number>();
  /** Advances the next-code counter; true when the dictionary was just reset (out of codes). */
  const incHi = (): boolean => {
    hi++;
    if (hi === overflow) {
      width++;
      overflow <<= 1;
    }
    if (hi === MAX_CODE) {
      write(CLEAR);
      width = 9;
      hi = EOF;
      overflow = 512;
      table = new Map();
      return true;
    }
    return false;
  };
  if (input.length === 0) {
    write(CLEAR);
  } else {
    write(CLEAR);
    let code = input[0]!;
    for (let i = 1; i < input.length; i++) {
      const literal = input[i]!;
      const key = (code << 8) | literal;
      const found = table.get(key);
      if (found !== undefined) {
        code = found;
        continue;
      }
      write(code);
      code = literal;
      if (incHi()) continue;
      table.set(key, hi);
    }
    write(code);
    incHi();
  }
  write(EOF);
  if (nBits > 0) out.push(bits & 0xff);
  return Uint8Array.from(out);
}

/**
 * Decompresses Go LZW (LSB, literal width 8). Throws `LzwError` on an invalid code or a stream
 * ending before the end code, `LzwLimitError` for output beyond `maxOutputBytes` (a decompression
 * bomb): the output grows by doubling, so at most about 2 × min(output, maxOutputBytes) bytes are
 * allocated. (No ratio bound is added: with 12-bit codes one code expands to at most ~3,840 bytes,
 * about 2,560× its 12 bits, and Go's own writer reaches ~1,300× on long runs of one byte, so any
 * ratio bound safe for legitimate input would bind later than `maxOutputBytes` does.)
 * Either error carries `outputBytes`, the bytes written before the failure (`maxOutputBytes` for
 * LzwLimitError).
 *
 * Every defined code's string is already in the output: code `hi` is the string of the previous
 * code (written at `lastStart`) followed by the first byte of the current one, which the output
 * holds right after it. So the table keeps each code's offset and length in the output, and a
 * code is written with one `copyWithin` (a native memmove) instead of a walk of its prefix chain:
 * the cost is per code, not per output byte, also when V8 runs this interpreted (the speaker runs
 * without V8's optimizing compilers: a zero-filled push/pull bomb stopped at 1 MiB cost 38-52 ms
 * of CPU there when every byte walked its chain, 1-14 ms this way; issue #14).
 */
export function lzwDecode(input: Uint8Array, maxOutputBytes: number): Uint8Array {
  const start = new Int32Array(4096); // output offset of each defined code's string (≥ 258)
  const length = new Uint16Array(4096); // its length
  let out = new Uint8Array(Math.max(0, Math.min(Math.max(input.length * 4, 64), maxOutputBytes)));
  let o = 0;
  const fail = (message: string): never => {
    const e = new LzwError(message);
    e.outputBytes = o;
    throw e;
  };
  /** Makes room for `n` more output bytes: doubling, never past maxOutputBytes. */
  const reserve = (n: number): void => {
    const need = o + n;
    if (need <= out.length) return;
    if (need > maxOutputBytes) {
      const e = new LzwLimitError(`lzw: output exceeds ${maxOutputBytes} bytes`);
      e.outputBytes = maxOutputBytes;
      throw e;
    }
    let capacity = Math.max(64, out.length * 2);
    while (capacity < need) capacity *= 2;
    const next = new Uint8Array(Math.min(capacity, maxOutputBytes));
    next.set(out.subarray(0, o));
    out = next;
  };
  let width = 9;
  let hi = EOF;
  let overflow = 512;
  let last = -1;
  let lastStart = 0; // where the previous code's string begins in the output
  let bits = 0;
  let nBits = 0;
  let p = 0;
  for (;;) {
    while (nBits < width) {
      if (p >= input.length) fail('lzw: unexpected end of data');
      bits |= input[p++]! << nBits;
      nBits += 8;
    }
    const code = bits & ((1 << width) - 1);
    bits >>>= width;
    nBits -= width;
    const at = o;
    if (code < CLEAR) {
      if (o >= out.length) reserve(1);
      out[o++] = code;
    } else if (code > EOF && code < hi) {
      const n = length[code]!;
      reserve(n);
      const from = start[code]!;
      if (n <= 16) for (let i = 0; i < n; i++) out[o + i] = out[from + i]!;
      else out.copyWithin(o, from, from + n);
      o += n;
    } else if (code === CLEAR) {
      width = 9;
      hi = EOF;
      overflow = 512;
      last = -1;
      continue;
    } else if (code === EOF) {
      return out.slice(0, o);
    } else if (code === hi && last !== -1) {
      // KwKwK: the string of `last` followed by its own first byte
      const n = o - lastStart;
      reserve(n + 1);
      out.copyWithin(o, lastStart, lastStart + n);
      out[o + n] = out[lastStart]!;
      o += n + 1;
    } else {
      return fail('lzw: invalid code');
    }
    if (last !== -1) {
      // the previous string and the first byte of this one, which follows it in the output
      start[hi] = lastStart;
      length[hi] = at - lastStart + 1;
    }
    last = code;
    lastStart = at;
    hi++;
    if (hi >= overflow) {
      if (width === 12) {
        last = -1;
        hi--;
      } else {
        width++;
        overflow = 1 << width;
      }
    }
  }
}
