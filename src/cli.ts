/**
 * Entry point (bin/metallb-ts execs this on Node 24). Runs the program and maps what comes out
 * of it to exit codes: a UserError prints `metallb-ts: <message>` on one line and exits with its
 * code (2 bad input/usage, 3 unreachable cluster; commands set 1 themselves for "no"); commander's
 * usage errors exit 2 the same way; anything else is a bug: its stack is printed and the exit
 * status is 70 (EX_SOFTWARE), so it is never mistaken for a "no".
 *
 * What it runs on is checked first, so a broken setup is one line and exit 2 rather than a stack:
 * a Node older than 24 (Node 22.18+ strips types too, so it gets this far), and runtime
 * dependencies missing from node_modules (a copy without `npm ci`). That is why this file imports
 * only node: modules, errors.ts and runtime/package-root.ts statically and the program (commander, yaml, ...) dynamically.
 */
import { fileURLToPath } from 'node:url';
import { UserError, EXIT_BAD_INPUT } from './core/errors.ts';
import { PACKAGE_ROOT } from './runtime/package-root.ts';

/** Exit status of a crash (a programming error). */
export const EXIT_CRASH = 70;

/** The oldest Node major metallb-ts runs on (package.json engines; bin/metallb-ts checks it too). */
export const MIN_NODE_MAJOR = 24;

/** The package's root directory (where `npm ci` is to be run), from src/ and from the bundle in dist/ alike. */
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

/** Runs metallb-ts with `argv` (without node and script) and returns the exit status. */
export async function main(argv: readonly string[]): Promise<number> {
  const old = nodeVersionProblem();
  if (old) {
    process.stderr.write(`metallb-ts: ${old}\n`);
    return EXIT_BAD_INPUT;
  }
  let CommanderError: typeof import('commander').CommanderError | undefined;
  let oneLine = (s: string): string => s.replace(/\s*\n\s*/g, ' ').trim();
  try {
    // A command named first gets a program with that command only: a daemon never loads the
    // diagnostics layer, explain never loads the other commands (see commands/program.ts).
    const [commander, frame, { setSnapshotWarningHandler }] = await Promise.all([import('commander'), import('./commands/program.ts'), import('./kube/snapshot.ts')]);
    CommanderError = commander.CommanderError;
    oneLine = frame.oneLine;
    // The snapshot loader's warnings (objects defined twice with different contents): one line each.
    setSnapshotWarningHandler((message) => {
      process.stderr.write(`metallb-ts: warning: ${oneLine(message)}\n`);
    });
    const single = frame.singleCommandOf(argv);
    const program = single ? await frame.buildCommandProgram(single) : (await import('./commands/index.ts')).buildProgram();
    await program.parseAsync([...argv], { from: 'user' });
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

// A reader that went away (`metallb-ts snapshot ... | head`) is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

// Not a top-level await: the bundle (scripts/bundle.ts) is a script, where there is none.
void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
