/**
 * Entry point (bin/metallb-ts execs this on Node 24, or dist/cli.cjs, its bundle): every command.
 * runtime/cli-run.ts runs the program and maps what comes out of it to exit codes (one line and 2
 * for bad input, 70 and a stack for a bug), after checking the Node version; this file imports
 * only that statically and the program (commander, the commands, ...) when it runs, so that a
 * missing runtime dependency is one line too. The daemons' bundle starts from src/daemon-cli.ts.
 */
import { type LoadedProgram, startCli } from './runtime/cli-run.ts';

export { EXIT_CRASH, MIN_NODE_MAJOR, missingPackage, nodeVersionProblem } from './runtime/cli-run.ts';

/**
 * The program for `argv`: a command named first gets a program with that command only (a daemon
 * never loads the diagnostics layer, explain never loads the other commands: commands/program.ts);
 * anything else (help, completion, a mistyped command) the full program.
 */
async function loadProgram(argv: readonly string[]): Promise<LoadedProgram> {
  const [commander, frame, { setSnapshotWarningHandler }] = await Promise.all([import('commander'), import('./commands/program.ts'), import('./kube/snapshot.ts')]);
  // The snapshot loader's warnings (objects defined twice with different contents): one line each.
  setSnapshotWarningHandler((message) => {
    process.stderr.write(`metallb-ts: warning: ${frame.oneLine(message)}\n`);
  });
  const single = frame.singleCommandOf(argv);
  const program = single ? await frame.buildCommandProgram(single) : (await import('./commands/index.ts')).buildProgram();
  return { program, CommanderError: commander.CommanderError, oneLine: frame.oneLine };
}

startCli(loadProgram);
