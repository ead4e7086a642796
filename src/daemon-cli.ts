/**
 * Entry point of the daemons' bundle (dist/daemon.cjs, scripts/bundle.ts): `metallb-ts speaker`
 * and `metallb-ts controller` only, which bin/metallb-ts runs from it. It builds the same
 * one-command program as src/cli.ts does for a daemon (commands/frame.ts and the daemon's own
 * command module: same flags, help and errors) but imports neither commands/program.ts nor
 * commands/index.ts, so that the bundle holds no diagnostics command (explain, whois, validate,
 * allocate, whatif, snapshot, members, completion), their renderers and parsers: a smaller script
 * and V8 code cache in every daemon's memory (issue #14; README, Performance).
 */
import { UserError } from './core/errors.ts';
import { type LoadedProgram, startCli } from './runtime/cli-run.ts';

/**
 * The program of the daemon `argv` names first.
 * @throws UserError (exit 2) when `argv` names no daemon: bin/metallb-ts never runs this bundle
 *   for another command.
 */
async function loadDaemonProgram(argv: readonly string[]): Promise<LoadedProgram> {
  // not kube/snapshot.ts (`speaker --dry-run -f` loads it, with its own warning handler): with
  // node:fs/promises, which it imports, 0.6 MiB resident in every daemon (issue #14)
  const [commander, frame] = await Promise.all([import('commander'), import('./commands/frame.ts')]);
  const daemon = frame.daemonOf(argv);
  if (!daemon) throw new UserError(`the daemons' bundle runs ${frame.DAEMONS.join(' and ')} only, not ${JSON.stringify(argv[0] ?? '')}; run bin/metallb-ts`);
  const register = daemon === 'speaker' ? (await import('./commands/speaker.ts')).registerSpeaker : (await import('./commands/controller.ts')).registerController;
  const program = frame.programFrame();
  register(program);
  return { program: frame.finishProgram(program), CommanderError: commander.CommanderError, oneLine: frame.oneLine };
}

startCli(loadDaemonProgram);
