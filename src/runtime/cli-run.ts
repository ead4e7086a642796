/**
 * What both entry points do with a program (src/cli.ts: every command; src/daemon-cli.ts, the
 * daemons' bundle: `speaker` and `controller` only): run it and map what comes out of it to exit
 * codes. A UserError prints `metallb-ts: <message>` on one line and exits with its code (2 bad
 * input/usage, 3 unreachable cluster; commands set 1 themselves for "no"); commander's usage errors
 * exit 2 the same way; anything else is a bug: its stack is printed and the exit status is 70
 * (EX_SOFTWARE), so it is never mistaken for a "no".
 *
 * What it runs on is checked first, so a broken setup is one line and exit 2 rather than a stack:
 * a Node older than 24 (Node 22.18+ strips types too, so it gets this far), and runtime
 * dependencies missing from node_modules (a copy without `npm ci`). That is why this file imports
 * only node: modules, errors.ts and package-root.ts, and the entry points load the program
 * (commander, ...) in `load`.
 */
import { fileURLToPath } from 'node:url';
import { EXIT_BAD_INPUT, UserError } from '../core/errors.ts';
import { PACKAGE_ROOT } from './package-root.ts';

/** Exit status of a crash (a programming error). */
export const EXIT_CRASH = 70;

/** The oldest Node major metallb-ts runs on (package.json engines; bin/metallb-ts checks it too). */
export const MIN_NODE_MAJOR = 24;

/** The package's root directory (where `npm ci` is to be run), from src/ and from the bundles in dist/ alike. */
const ROOT = PACKAGE_ROOT;

/** One line when `version` (process.versions.node) is too old, else null. */
export function nodeVersionProblem(version: string = process.versions.node, execPath: string = process.execPath): string | null {
  const major = Number(version.split('.')[0]);
  if (major >= MIN_NODE_MAJOR) return null;
  return `needs Node.js >= ${MIN_NODE_MAJOR} (found v${version} at ${execPath}); run npm ci to install the pinned node@${MIN_NODE_MAJOR}, or put Node ${MIN_NODE_MAJOR} on PATH`;
}

/**
 * The package a module-not-found error is about (`commander`, `@kubernetes/client-node`), or null
 * when it is not about a package (a missing file of our own is a bug and keeps its stack).
 */
export function missingPackage(err: unknown): string | null {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' && e?.code !== 'MODULE_NOT_FOUND') return null;
  const m = /^Cannot find (?:package|module) '([^']+)'/.exec(typeof e.message === 'string' ? e.message : '');
  if (!m) return null;
  let spec = m[1]!;
  if (spec.startsWith('file:')) spec = fileURLToPath(spec);
  if (spec.startsWith('/')) {
    // A file of our own (also when metallb-ts itself sits in some node_modules): a bug.
    if (spec.startsWith(`${ROOT}/`) && !spec.startsWith(`${ROOT}/node_modules/`)) return null;
    // A package whose directory is there but whose entry file is not (a half-copied node_modules).
    const i = spec.lastIndexOf('/node_modules/');
    if (i < 0) return null;
    spec = spec.slice(i + '/node_modules/'.length);
  } else if (spec.startsWith('.') || spec.startsWith('node:')) {
    return null;
  }
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** What an entry point's `load` gives `runProgram`: the program and how to read its errors. */
export interface LoadedProgram {
  /** the commander program to parse argv with */
  program: import('commander').Command;
  /** commander's error class (its usage errors, --help and --version end as one) */
  CommanderError: typeof import('commander').CommanderError;
  /** folds a message to one line (commands/frame.ts oneLine) */
  oneLine: (s: string) => string;
}

/**
 * Runs the program `load(argv)` builds with `argv` (without node and script) and returns the exit
 * status. `load` runs inside the error mapping: a missing package or a UserError while loading
 * ends as one line too.
 */
export async function runProgram(argv: readonly string[], load: (argv: readonly string[]) => Promise<LoadedProgram>): Promise<number> {
  const old = nodeVersionProblem();
  if (old) {
    process.stderr.write(`metallb-ts: ${old}\n`);
    return EXIT_BAD_INPUT;
  }
  let CommanderError: LoadedProgram['CommanderError'] | undefined;
  let oneLine = (s: string): string => s.replace(/\s*\n\s*/g, ' ').trim();
  try {
    const loaded = await load(argv);
    CommanderError = loaded.CommanderError;
    oneLine = loaded.oneLine;
    await loaded.program.parseAsync([...argv], { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (CommanderError && err instanceof CommanderError) {
      // --help and --version end here with exit code 0; the message was already written.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      return err.exitCode === 0 ? 0 : EXIT_BAD_INPUT;
    }
    if (err instanceof UserError) {
      process.stderr.write(`metallb-ts: ${oneLine(err.message)}\n`);
      return err.exitCode;
    }
    const pkg = missingPackage(err);
    if (pkg) {
      process.stderr.write(`metallb-ts: the package ${pkg} is not installed (a runtime dependency); run npm ci in ${ROOT}\n`);
      return EXIT_BAD_INPUT;
    }
    process.stderr.write(`metallb-ts: internal error (this is a bug):\n${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return EXIT_CRASH;
  }
}

/**
 * An entry point's start: runs the program of `load` with the process's arguments and sets the
 * exit code from it. A reader that went away (`metallb-ts snapshot ... | head`) is not an error.
 * Not a top-level await: the bundles (scripts/bundle.ts) are scripts, where there is none.
 */
export function startCli(load: (argv: readonly string[]) => Promise<LoadedProgram>): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
  void runProgram(process.argv.slice(2), load).then((code) => {
    process.exitCode = code;
  });
}
