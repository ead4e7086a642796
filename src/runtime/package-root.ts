/**
 * The package's root directory (where package.json, native/ and node_modules/ are), for the paths
 * the program computes at run time. Right in both layouts the program runs from: this file as
 * src/runtime/package-root.ts, and bundled into dist/cli.cjs (scripts/bundle.ts): the nearest
 * directory above the running module that holds a package.json (the root's: src/ and dist/ have
 * none). A path relative to the module that uses it (`../../native/...` from src/speaker/) would
 * be wrong once bundled.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The nearest directory at or above `dir` with a package.json; `dir`'s parent when none has one. */
function rootAbove(dir: string): string {
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(join(d, 'package.json'))) return d;
    if (dirname(d) === d) return dirname(dir);
  }
}

/** Absolute path of the package root, without a trailing slash. */
export const PACKAGE_ROOT = rootAbove(dirname(fileURLToPath(import.meta.url)));
