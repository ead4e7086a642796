/**
 * The metallb-ts command-line program: every subcommand of src/commands/, registered on one
 * commander program. `src/cli.ts` runs it; the completion generator and tests inspect it.
 */
import { Command } from 'commander';
import { registerAllocate } from './allocate.ts';
import { registerCompletion } from './completion.ts';
import { registerController } from './controller.ts';
import { registerExplain } from './explain.ts';
import { registerMembers } from './members.ts';
import { registerSnapshot } from './snapshot.ts';
import { registerSpeaker } from './speaker.ts';
import { registerValidate } from './validate.ts';
import { registerWhatIf } from './whatif.ts';
import { registerWhois } from './whois.ts';

/** The version printed by `--version`. */
export const VERSION = '0.1.0 (MetalLB v0.16.1)';

/**
 * Builds the program. Usage errors go through `exitOverride` (they are thrown as CommanderError,
 * never exit here) and commander's own error text is written by `writeErr`, folded to one line.
 */
export function buildProgram(io: { writeOut?: (s: string) => void; writeErr?: (s: string) => void } = {}): Command {
  const writeErr = io.writeErr ?? ((s: string) => process.stderr.write(s));
  const program = new Command('metallb-ts')
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
  for (const register of [registerExplain, registerWhois, registerAllocate, registerValidate, registerWhatIf, registerSnapshot, registerController, registerSpeaker, registerMembers, registerCompletion]) {
    register(program);
  }
  for (const cmd of program.commands) {
    cmd.exitOverride().configureOutput(program.configureOutput());
  }
  return program;
}

/** Folds a possibly multi-line message into one line. */
export function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ').trim();
}
