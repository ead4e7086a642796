/**
 * Structured logs of the controller and the speaker, as MetalLB v0.16.1 writes them (go-kit's JSON
 * logger on stdout, `internal/logging`): one JSON object per line with sorted keys, `level`
 * (debug|info|warn|error), `ts` (RFC 3339, seconds, UTC) and, where MetalLB has one, `caller`, e.g.
 * `{"event":"serviceAnnounced","ips":["192.0.2.10"],"level":"info","msg":"service has IP, announcing","pool":"lab","protocol":"layer2","service":"shop/web","ts":"2025-01-01T00:00:00Z"}`.
 */
import { rfc3339Utc } from './utc-time.ts';

/** Log levels in increasing severity, plus MetalLB's `all` and `none` filters. */
export const LOG_LEVELS = ['all', 'debug', 'info', 'warn', 'error', 'none'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
type Severity = 'debug' | 'info' | 'warn' | 'error';
const RANK: Record<LogLevel, number> = { all: 0, debug: 1, info: 2, warn: 3, error: 4, none: 5 };

/** Key/value pairs of one log line. `undefined` values are left out. */
export type LogFields = Record<string, unknown>;

/** A go-kit style logger: `with` adds context keys, the level methods write one line. */
export interface Logger {
  with(fields: LogFields): Logger;
  debug(fields: LogFields): void;
  info(fields: LogFields): void;
  warn(fields: LogFields): void;
  error(fields: LogFields): void;
}

/** Options of jsonLogger. */
export interface JsonLoggerOptions {
  /** lowest level written (default `info`); `all` = debug, `none` writes nothing */
  level?: LogLevel;
  /** where lines go (default process.stdout) */
  write?: (line: string) => void;
  /** clock (default Date.now), for tests */
  now?: () => number;
}

/** RFC 3339 at second precision in UTC, as go-kit's `TimestampFormat(time.Now, time.RFC3339)` prints UTC. */
export function rfc3339(ms: number): string {
  return rfc3339Utc(ms, false);
}

function jsonValue(v: unknown): unknown {
  if (v instanceof Error) return v.message;
  return v;
}

/** A logger writing MetalLB-style JSON lines. */
export function jsonLogger(opts: JsonLoggerOptions = {}, context: LogFields = {}): Logger {
  const min = RANK[opts.level ?? 'info'];
  const write =
    opts.write
    ?? ((line: string) => {
      process.stdout.write(line);
    });
  const now = opts.now ?? Date.now;
  const emit = (severity: Severity, fields: LogFields): void => {
    if (RANK[severity] < min) return;
    const all: LogFields = { ...context, ...fields, level: severity, ts: rfc3339(now()) };
    const out: LogFields = {};
    for (const k of Object.keys(all).sort()) {
      if (all[k] !== undefined) out[k] = jsonValue(all[k]);
    }
    write(`${JSON.stringify(out)}\n`);
  };
  return {
    with: (fields) => jsonLogger(opts, { ...context, ...fields }),
    debug: (f) => emit('debug', f),
    info: (f) => emit('info', f),
    warn: (f) => emit('warn', f),
    error: (f) => emit('error', f),
  };
}

/** A logger that writes nothing (unit tests). */
export const silentLogger: Logger = jsonLogger({ level: 'none' });
