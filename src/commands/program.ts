/**
 * The one-command programs (their frame, in commands/frame.ts, is re-exported here): when the
 * first argument names a command,
 * src/cli.ts builds a program with that command only (buildCommandProgram), so `metallb-ts speaker`
 * and `metallb-ts controller` never load the diagnostics layer (explain, whois, validate, allocate,
 * whatif, their renderers and parsers: about 70 modules, 100 ms of CPU at start and their heap, on
 * every node), and `explain` loads neither the daemons nor the other diagnostics commands (about
 * 60 ms of a 300 ms start). `src/commands/index.ts` registers every command on the same frame:
 * the program of `--help`, `help`, `completion` (generated from every command) and mistyped
 * command names (commander's suggestion needs every name).
 */
import type { Command } from 'commander';
import { type Daemon, finishProgram, type ProgramIO, programFrame } from './frame.ts';

export { DAEMONS, type Daemon, daemonOf, finishProgram, oneLine, type ProgramIO, programFrame, VERSION } from './frame.ts';

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
