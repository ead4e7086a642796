/**
 * Colours for human output. On only when the stream is a TTY and NO_COLOR is unset or empty
 * (https://no-color.org); FORCE_COLOR is not consulted, so piped output is always plain.
 */
import { createRequire } from 'node:module';

/** Whether output written to `stream` should be coloured. */
export function colorEnabled(stream: { isTTY?: boolean } = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && (env['NO_COLOR'] === undefined || env['NO_COLOR'] === '');
}

/** The styles the renderers use: each wraps its text in the style's escape codes, or returns it as is. */
export interface Palette {
  bold(text: string): string;
  green(text: string): string;
  red(text: string): string;
  yellow(text: string): string;
}

const plain = (text: string): string => text;

/** The palette of uncoloured output: every style returns its text unchanged. */
const PLAIN: Palette = { bold: plain, green: plain, red: plain, yellow: plain };

/**
 * A palette that colours only when `enabled`: chalk at level 1 (16 colours), loaded only then
 * (piped output, the common case for scripts, never loads it); otherwise PLAIN, which writes what
 * chalk writes at level 0.
 */
export function palette(enabled: boolean = colorEnabled()): Palette {
  if (!enabled) return PLAIN;
  const { Chalk } = createRequire(import.meta.url)('chalk') as typeof import('chalk');
  return new Chalk({ level: 1 });
}
