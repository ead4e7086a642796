/**
 * The metallb-ts command-line program: every subcommand of src/commands/, registered on one
 * commander program. `src/cli.ts` runs it; the completion generator and tests inspect it.
 */
import type { Command } from 'commander';
import { finishProgram, programFrame, type ProgramIO } from './program.ts';
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

export { VERSION, oneLine } from './program.ts';

/**
 * Builds the program: programFrame with every command (usage errors thrown as CommanderError,
 * commander's error text written by `writeErr`, folded to one line).
 */
export function buildProgram(io: ProgramIO = {}): Command {
  const program = programFrame(io);
  for (const register of [registerExplain, registerWhois, registerAllocate, registerValidate, registerWhatIf, registerSnapshot, registerController, registerSpeaker, registerMembers, registerCompletion]) {
    register(program);
  }
  return finishProgram(program);
}
