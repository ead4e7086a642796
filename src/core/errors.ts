/**
 * User-facing errors. A user error carries where it happened (file, line, object) and the exit
 * code the CLI ends with; the CLI prints `message` on one line, without a stack trace.
 * Anything that is not a UserError is a programming error and crashes with its stack.
 *
 * Exit codes (architecture note): 0 ok, 1 the answer is "no", 2 bad input or usage,
 * 3 cannot reach the cluster.
 */

export const EXIT_OK = 0;
export const EXIT_NO = 1;
export const EXIT_BAD_INPUT = 2;
export const EXIT_UNREACHABLE = 3;

/** The most characters of a user's value an error or finding quotes; longer ones are cut (see `quote`). */
export const MAX_QUOTED_CHARS = 80;

/**
 * A user's value as an error or finding echoes it: JSON-quoted when it is a string (other values,
 * such as a label selector, as JSON), and when longer than MAX_QUOTED_CHARS characters (4 ×
 * that for other values) only its first ones, clearly cut, with its whole size:
 * `"AAAA…"(10485760 bytes)`. A 10 MB value in a snapshot then
 * makes a one-line error of a few hundred characters, not of 10 MB. Never throws.
 */
export function quote(value: unknown): string {
  let text: string;
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  const max = typeof value === 'string' ? MAX_QUOTED_CHARS : 4 * MAX_QUOTED_CHARS;
  if (text.length <= max) return typeof value === 'string' ? JSON.stringify(value) : text;
  const head = JSON.stringify(text.slice(0, max));
  return `${head.slice(0, -1)}…"(${Buffer.byteLength(text, 'utf8')} bytes)`;
}

/**
 * `message` with every double-quoted run longer than MAX_QUOTED_CHARS characters cut as `quote`
 * cuts it (escaped quotes inside a run are skipped; an excerpt already cut is kept), and any
 * unquoted stretch longer than MAX_UNQUOTED_CHARS cut too: the backstop that keeps an error
 * echoing a user's value without `quote` to one short line. Linear in the message.
 */
export function boundQuotes(message: string): string {
  if (message.length <= MAX_QUOTED_CHARS) return message;
  let out = '';
  let i = 0;
  while (i < message.length) {
    const open = message.indexOf('"', i);
    if (open < 0) break;
    let close = open + 1;
    while (close < message.length && message[close] !== '"') close += message[close] === '\\' ? 2 : 1;
    if (close >= message.length) break;
    const inner = message.slice(open + 1, close);
    out += cutRun(message.slice(i, open));
    ALREADY_CUT.lastIndex = close + 1;
    const cut = inner.length > MAX_QUOTED_CHARS && !(inner.endsWith('…') && ALREADY_CUT.test(message));
    out += cut ? `"${inner.slice(0, MAX_QUOTED_CHARS)}…"(${Buffer.byteLength(inner, 'utf8')} bytes)` : `"${inner}"`;
    i = close + 1;
  }
  out += cutRun(message.slice(i));
  return out;
}

/** What follows an excerpt `quote` or `boundQuotes` already cut (a message wrapped twice is not cut twice). */
const ALREADY_CUT = /\(\d+ bytes\)/y;

/**
 * The longest unquoted stretch of an error message kept whole: 2,048 characters (the longest of
 * metallb-ts's own messages is under 1,000; more is an unquoted user value).
 */
export const MAX_UNQUOTED_CHARS = 2048;

/** An unquoted stretch: whole, or its first MAX_QUOTED_CHARS characters, cut clearly. */
function cutRun(text: string): string {
  return text.length <= MAX_UNQUOTED_CHARS ? text : `${text.slice(0, MAX_QUOTED_CHARS)}…(${Buffer.byteLength(text, 'utf8')} bytes)`;
}

/**
 * Base class of every error the CLI reports in one line. `exitCode` defaults to 2. The message
 * goes through `boundQuotes`: a user's value it echoes is cut to a short excerpt.
 */
export class UserError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number = EXIT_BAD_INPUT) {
    super(boundQuotes(message));
    this.name = 'UserError';
    this.exitCode = exitCode;
  }
}

/** A snapshot file that cannot be read or parsed; the message names the file and line. */
export class InputError extends UserError {
  readonly file: string;
  readonly line: number | undefined;
  constructor(file: string, message: string, line?: number) {
    super(`${file}${line !== undefined ? `:${line}` : ''}: ${message}`);
    this.name = 'InputError';
    this.file = file;
    this.line = line;
  }
}

/**
 * A configuration MetalLB would reject. `object` is the reference of the offending object
 * (`metallb-system/IPAddressPool/public`, from objectRef) when one is to blame; `detail` what is
 * wrong without it; `message` the line MetalLB prints, `object: detail` (or `detail` alone).
 */
export class ConfigError extends UserError {
  readonly object: string | undefined;
  /** What is wrong, without the object (its quoted values cut as `boundQuotes` cuts them). */
  readonly detail: string;
  constructor(detail: string, object?: string) {
    super(object ? `${object}: ${detail}` : detail);
    this.name = 'ConfigError';
    this.object = object;
    this.detail = boundQuotes(detail);
  }
}

/**
 * The outcome of checking one object when its rejection is expected: its value, or the
 * ConfigError naming it. The core returns these; it throws only at a module's edge (parseConfig).
 */
export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: ConfigError };

/** The Kubernetes API server cannot be reached or refuses; exit 3. */
export class ClusterUnreachableError extends UserError {
  constructor(message: string) {
    super(message, EXIT_UNREACHABLE);
    this.name = 'ClusterUnreachableError';
  }
}

/**
 * A violation MetalLB reports as a `TransientError`: a reference to an object that may simply
 * not exist yet (a password Secret, a BFDProfile, a Community alias). MetalLB still rejects the
 * configuration, but retries when objects change; the webhooks clear these references first
 * (resetTransient) so that objects can be applied in any order.
 */
export class TransientConfigError extends ConfigError {
  readonly transient = true;
  constructor(message: string, object?: string) {
    super(message, object);
    this.name = 'TransientConfigError';
  }
}
