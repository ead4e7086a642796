/**
 * The program's frame without its commands (version, help, usage errors as CommanderError, output
 * folded to one line), and the one-command programs: when the first argument names a command,
 * src/cli.ts builds a program with that command only (buildCommandProgram), so `metallb-ts speaker`
 * and `metallb-ts controller` never load the diagnostics layer (explain, whois, validate, allocate,
 * whatif, their renderers and parsers: about 70 modules, 100 ms of CPU at start and their heap, on
 * every node), and `explain` loads neither the daemons nor the other diagnostics commands (about
 * 60 ms of a 300 ms start). `src/commands/index.ts` registers every command on the same frame:
 * the program of `--help`, `help`, `completion` (generated from every command) and mistyped
 * command names (commander's suggestion needs every name).
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

/**
 * Each command that runs in a program of its own, and how its module registers it (loaded only
 * when that command runs). `completion` is not here: its script is generated from every command.
 */
const SINGLE_COMMANDS = {
  explain: async () => (await import('./explain.ts')).registerExplain,
  whois: async () => (await import('./whois.ts')).registerWhois,
  allocate: async () => (await import('./allocate.ts')).registerAllocate,
  validate: async () => (await import('./validate.ts')).registerValidate,
  whatif: async () => (await import('./whatif.ts')).registerWhatIf,
  snapshot: async () => (await import('./snapshot.ts')).registerSnapshot,
  controller: async () => (await import('./controller.ts')).registerController,
  speaker: async () => (await import('./speaker.ts')).registerSpeaker,
  members: async () => (await import('./members.ts')).registerMembers,
} as const satisfies Record<string, () => Promise<(program: Command) => void>>;

/** A command that gets a program of its own (every command but `completion`). */
export type SingleCommand = keyof typeof SINGLE_COMMANDS;

/** The commands that get a program of their own, in no particular order. */
export const SINGLE_COMMAND_NAMES = Object.keys(SINGLE_COMMANDS) as SingleCommand[];

/**
 * The command `argv` (without node and script) runs in a program of its own: its first argument
 * when that names one of SINGLE_COMMANDS exactly, else undefined (options first, `help`,
 * `completion`, a mistyped or no command: the full program).
 */
export function singleCommandOf(argv: readonly string[]): SingleCommand | undefined {
  const first = argv[0] ?? '';
  return Object.hasOwn(SINGLE_COMMANDS, first) ? (first as SingleCommand) : undefined;
}

/**
 * The program with the one command `name` (its flags, help and errors are those of the full
 * program's command of that name; test/unit/daemon-program.test.ts compares them).
 */
export async function buildCommandProgram(name: SingleCommand, io: ProgramIO = {}): Promise<Command> {
  const program = programFrame(io);
  (await SINGLE_COMMANDS[name]())(program);
  return finishProgram(program);
}

/** The program with the one command `daemon`: buildCommandProgram of a daemon. */
export async function buildDaemonProgram(daemon: Daemon, io: ProgramIO = {}): Promise<Command> {
  return buildCommandProgram(daemon, io);
}
