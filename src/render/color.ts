/**
 * Colours for human output. On only when the stream is a TTY and NO_COLOR is unset or empty
 * (https://no-color.org); FORCE_COLOR is not consulted, so piped output is always plain.
 */
import { Chalk, type ChalkInstance } from 'chalk';

/** Whether output written to `stream` should be coloured. */
export function colorEnabled(
  stream: { isTTY?: boolean } = process.stdout,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  return stream.isTTY === true && (env['NO_COLOR'] === undefined || env['NO_COLOR'] === '');
}

/** A chalk instance that colours only when `enabled` (level 0 writes plain text). */
export function palette(enabled: boolean = colorEnabled()): ChalkInstance {
  return new Chalk({ level: enabled ? 1 : 0 });
}
