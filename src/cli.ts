/**
 * Entry point (bin/metallb-ts execs this on Node 24). Runs the program and maps what comes out
 * of it to exit codes: a UserError prints `metallb-ts: <message>` on one line and exits with its
 * code (2 bad input/usage, 3 unreachable cluster; commands set 1 themselves for "no"); commander's
 * usage errors exit 2 the same way; anything else is a bug: its stack is printed and the exit
 * status is 70 (EX_SOFTWARE), so it is never mistaken for a "no".
 */
import { CommanderError } from 'commander';
import { UserError, EXIT_BAD_INPUT } from './core/errors.ts';
import { buildProgram, oneLine } from './commands/index.ts';
import { setSnapshotWarningHandler } from './kube/snapshot.ts';

/** Exit status of a crash (a programming error). */
export const EXIT_CRASH = 70;

/** Runs metallb-ts with `argv` (without node and script) and returns the exit status. */
export async function main(argv: readonly string[]): Promise<number> {
  // The snapshot loader's warnings (objects defined twice with different contents): one line each.
  setSnapshotWarningHandler((message) => { process.stderr.write(`metallb-ts: warning: ${oneLine(message)}\n`); });
  const program = buildProgram();
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with exit code 0; the message was already written.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      return err.exitCode === 0 ? 0 : EXIT_BAD_INPUT;
    }
    if (err instanceof UserError) {
      process.stderr.write(`metallb-ts: ${oneLine(err.message)}\n`);
      return err.exitCode;
    }
    process.stderr.write(`metallb-ts: internal error (this is a bug):\n${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    return EXIT_CRASH;
  }
}

// A reader that went away (`metallb-ts snapshot ... | head`) is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

process.exitCode = await main(process.argv.slice(2));
