/**
 * Output formats shared by every command (`-o table|wide|json|yaml`) and the json/yaml printers.
 * Programs read json/yaml; people read tables. Results go to stdout, errors to stderr only.
 */
import { createRequire } from 'node:module';

// `yaml` is loaded on first use (only -o yaml needs it): about 50 ms of CPU off every other start.
const require = createRequire(import.meta.url);
const yaml = (): typeof import('yaml') => require('yaml') as typeof import('yaml');

/** Every value of `-o`. `wide` is the table with extra columns. */
export const OUTPUT_FORMATS = ['table', 'wide', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** Machine-readable formats only (e.g. `snapshot -o`). */
export const DATA_FORMATS = ['yaml', 'json'] as const;
export type DataFormat = (typeof DATA_FORMATS)[number];

/** `value` as indented JSON with a trailing newline. Sets and Maps are written as arrays/objects. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, jsonReplacer, 2) + '\n';
}

/**
 * `value` as YAML as kubectl writes it: block style, no line folding, no anchors, sequences not
 * indented, and strings YAML 1.1 would read otherwise (timestamps, yes/no) quoted. Ends in a newline.
 */
export function toYaml(value: unknown): string {
  return yaml().stringify(JSON.parse(JSON.stringify(value, jsonReplacer)), { version: '1.1', lineWidth: 0, aliasDuplicateObjects: false, indentSeq: false });
}

function jsonReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Set) return [...value];
  if (value instanceof Map) return Object.fromEntries(value);
  return value;
}

/**
 * Writes a command's result: json/yaml of `data`, or the text `table(wide)` returns for table/wide.
 */
export function writeResult(format: OutputFormat, data: unknown, table: (wide: boolean) => string, out: NodeJS.WritableStream = process.stdout): void {
  switch (format) {
    case 'json':
      out.write(toJson(data));
      break;
    case 'yaml':
      out.write(toYaml(data));
      break;
    case 'table':
      out.write(table(false));
      break;
    case 'wide':
      out.write(table(true));
      break;
  }
}
