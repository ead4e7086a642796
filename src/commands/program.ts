/**
 * The program's frame without its commands (version, help, usage errors as CommanderError, output
 * folded to one line), and the daemons' program: `metallb-ts speaker` and `metallb-ts controller`
 * register only their own command, so a daemon never loads the diagnostics layer (explain, whois,
 * validate, allocate, whatif, their renderers and parsers): about 70 modules, 100 ms of CPU at
 * start and their heap, on every node. `src/commands/index.ts` registers every command on the same
 * frame; src/cli.ts picks the daemon program when the first argument names a daemon.
 */
import { Command } from 'commander';

/** The version printed by `--version`. */
export const VERSION = '0.1.0 (MetalLB v0.16.1)';

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

/**
 * The program with the one command `daemon` (its flags, help and errors are those of the full
 * program's command of that name; test/unit/cli.test.ts compares them).
 */
export async function buildDaemonProgram(daemon: Daemon, io: ProgramIO = {}): Promise<Command> {
  const program = programFrame(io);
  if (daemon === 'speaker') (await import('./speaker.ts')).registerSpeaker(program);
  else (await import('./controller.ts')).registerController(program);
  return finishProgram(program);
}
