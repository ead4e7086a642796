/**
 * Entry point of each daemon's bundle (scripts/bundle.ts builds it once per daemon, with
 * METALLB_TS_DAEMON set: dist/speaker.cjs runs `metallb-ts speaker` only, dist/controller.cjs
 * `metallb-ts controller` only; bin/metallb-ts runs each for its daemon). It builds the same
 * one-command program as src/cli.ts does for a daemon (commands/frame.ts and the daemon's own
 * command module: same flags, help and errors) but imports neither commands/program.ts nor
 * commands/index.ts, so that the bundle holds no diagnostics command (explain, whois, validate,
 * allocate, whatif, snapshot, members, completion), their renderers and parsers, nor the other
 * daemon: a smaller script and V8 code cache in every daemon's memory (issue #14; README,
 * Performance). Bundles only: src/cli.ts runs both daemons from src/.
 */
import type { Daemon } from './commands/frame.ts';
import { UserError } from './core/errors.ts';
import { type LoadedProgram, startCli } from './runtime/cli-run.ts';

/**
 * The daemon this bundle runs: a constant esbuild writes in (scripts/bundle.ts, `define`), so that
 * the import of the other daemon's command module is dead code the bundle leaves out.
 */
declare const METALLB_TS_DAEMON: Daemon;

/**
 * The program of the daemon `argv` names first, which must be this bundle's (METALLB_TS_DAEMON).
 * @throws UserError (exit 2) when `argv` names another command or daemon: bin/metallb-ts never
 *   runs this bundle for one.
 */
async function loadDaemonProgram(argv: readonly string[]): Promise<LoadedProgram> {
  // not kube/snapshot.ts (`speaker --dry-run -f` loads it, with its own warning handler): with
  // node:fs/promises, which it imports, 0.6 MiB resident in every daemon (issue #14)
  const [commander, frame] = await Promise.all([import('commander'), import('./commands/frame.ts')]);
  if (frame.daemonOf(argv) !== METALLB_TS_DAEMON) throw new UserError(`the ${METALLB_TS_DAEMON}'s bundle runs \`${METALLB_TS_DAEMON}\` only, not ${JSON.stringify(argv[0] ?? '')}; run bin/metallb-ts`);
  const register = METALLB_TS_DAEMON === 'speaker' ? (await import('./commands/speaker.ts')).registerSpeaker : (await import('./commands/controller.ts')).registerController;
  const program = frame.programFrame();
  register(program);
  return { program: frame.finishProgram(program), CommanderError: commander.CommanderError, oneLine: frame.oneLine };
}

startCli(loadDaemonProgram);
