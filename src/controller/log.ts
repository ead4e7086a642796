/**
 * Structured logs as MetalLB writes them (go-kit JSON lines on stderr): `level`, `ts` (RFC 3339
 * with nanosecond digits, UTC), `caller`, then the key/values of the call (`event`, `op`, `error`,
 * `msg`, ...). Errors are written as their message.
 */

/** MetalLB's `--log-level` values, most verbose first (`all` = debug, `none` = nothing). */
export const LOG_LEVELS = ['all', 'debug', 'info', 'warn', 'error', 'none'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const RANK: Record<string, number> = { all: 0, debug: 0, info: 1, warn: 2, error: 3, none: 4 };

/** Key/values of one log line. */
export type LogFields = Record<string, unknown>;

/** A logger bound to a `caller` and extra fields. */
export interface Logger {
  debug(fields: LogFields): void;
  info(fields: LogFields): void;
  warn(fields: LogFields): void;
  error(fields: LogFields): void;
  /** A logger writing the same place with `caller` and extra fields added to every line. */
  with(caller: string, fields?: LogFields): Logger;
}

/** Options of newLogger. */
export interface LoggerOptions {
  /** minimum level written (default info) */
  level?: LogLevel;
  /** where lines go (default process.stderr.write) */
  write?: (line: string) => void;
  /** clock (default Date.now) */
  now?: () => number;
}

function jsonValue(v: unknown): unknown {
  if (v instanceof Error) return v.message;
  if (typeof v === 'bigint') return v.toString();
  return v;
}

/** A logger writing JSON lines (see the module comment). */
export function newLogger(opts: LoggerOptions = {}, caller = 'main', bound: LogFields = {}): Logger {
  const min = RANK[opts.level ?? 'info'] ?? 1;
  const write = opts.write ?? ((line: string) => { process.stderr.write(line); });
  const now = opts.now ?? Date.now;
  const log = (level: 'debug' | 'info' | 'warn' | 'error', fields: LogFields): void => {
    if (RANK[level]! < min) return;
    const line: LogFields = { level, ts: new Date(now()).toISOString().replace(/Z$/, '000000Z'), caller, ...bound };
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) line[k] = jsonValue(v);
    write(`${JSON.stringify(line, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}\n`);
  };
  return {
    debug: (f) => log('debug', f),
    info: (f) => log('info', f),
    warn: (f) => log('warn', f),
    error: (f) => log('error', f),
    with: (c, f = {}) => newLogger(opts, c, { ...bound, ...f }),
  };
}

/** A logger that writes nothing (unit tests). */
export const silentLogger: Logger = newLogger({ level: 'none' });
