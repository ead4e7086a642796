/**
 * The program's frame without its commands (version, help, usage errors as CommanderError, output
 * folded to one line), shared by the full program (commands/index.ts), the one-command programs
 * (commands/program.ts) and the daemons' entry point (src/daemon-cli.ts, which must not import
 * commands/program.ts: its table of commands would pull every command into the daemons' bundle).
 */
import { Command } from 'commander';
import { VERSION } from '../runtime/version.ts';

/** The version printed by `--version` (src/runtime/version.ts). */
export { VERSION };

/** The daemons: the commands that run in a pod and get a program of their own. */
export const DAEMONS = ['speaker', 'controller'] as const;
export type Daemon = (typeof DAEMONS)[number];

/** Output of the program (tests capture it); default: stdout and stderr. */
export interface ProgramIO {
  writeOut?: (s: string) => void;
  writeErr?: (s: string) => void;
}

/** Folds a possibly multi-line message into one line. */
export function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ').trim();
}

/**
 * The program without commands. Usage errors go through `exitOverride` (they are thrown as
 * CommanderError, never exit here) and commander's own error text is written by `writeErr`,
 * folded to one line.
 */
export function programFrame(io: ProgramIO = {}): Command {
  const writeErr = io.writeErr ?? ((s: string) => process.stderr.write(s));
  return new Command('metallb-ts')
    .description("MetalLB v0.16.1's controller and speaker logic, run on a cluster snapshot to explain its decisions")
    .version(VERSION, '-V, --version', 'output the version number')
    .helpOption('-h, --help', 'display help for command')
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: io.writeOut ?? ((s: string) => process.stdout.write(s)),
      writeErr,
      // commander's errors ("error: unknown command 'x'\n(Did you mean y?)") become one line.
      outputError: (s: string, write: (s: string) => void) => write(`metallb-ts: ${oneLine(s.replace(/^error: /, ''))}\n`),
    });
}

/** Gives every command of `program` the program's exitOverride and output. Returns `program`. */
export function finishProgram(program: Command): Command {
  for (const cmd of program.commands) {
    cmd.exitOverride().configureOutput(program.configureOutput());
  }
  return program;
}

/** The daemon `argv` (without node and script) runs, if its first argument names one. */
export function daemonOf(argv: readonly string[]): Daemon | undefined {
  return (DAEMONS as readonly string[]).includes(argv[0] ?? '') ? (argv[0] as Daemon) : undefined;
}
