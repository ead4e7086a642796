/**
 * The package's root directory (where package.json, native/ and node_modules/ are), for the paths
 * the program computes at run time. Right in both layouts the program runs from: this file as
 * src/package-root.ts, and bundled into dist/cli.cjs (scripts/bundle.ts); both sit one directory
 * below the root, so `..` of the running module is the root. A path relative to the module that
 * uses it (`../../native/...` from src/speaker/) would be wrong once bundled.
 */
import { fileURLToPath } from 'node:url';

/** Absolute path of the package root, without a trailing slash. */
export const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
