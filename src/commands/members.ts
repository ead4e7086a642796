/**
 * `metallb-ts members --speaker HOST:PORT`: the memberlist view of one running speaker, read from
 * `GET /debug/members` on its metrics port. Table: NAME ADDRESS STATE INCARNATION (wide adds
 * PORT). With memberlist off the speaker counts every Node: the table lists them as alive.
 * Exit 0, 2 for bad input, 3 when the speaker cannot be reached or answers with an error.
 * Only node's own `fetch` here: the CLI loads every command file at start.
 */
import type { Command } from 'commander';
import { EXIT_UNREACHABLE, UserError } from '../core/errors.ts';
import { addOutputOption } from './options.ts';
import type { OutputFormat } from '../render/output.ts';

/** One member as the speaker reports it. */
export interface MemberRow {
  name: string;
  address: string;
  port: number;
  state: 'alive' | 'suspect' | 'dead' | 'left';
  incarnation: number;
}

/** The body of `/debug/members`: memberlist on (`self`, `members`) or off (`memberlist: false`, `alive`). */
export type MembersView = { self: string; members: MemberRow[] } | { memberlist: false; alive: string[] };

/** The `--speaker` value as a URL base; throws UserError (exit 2) when it is not HOST:PORT. */
export function speakerURL(arg: string): string {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s/[\]]+):(\d{1,5})$/.exec(arg.trim());
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) throw new UserError(`invalid --speaker "${arg}": expected HOST:PORT (the speaker's metrics address)`);
  return `http://${m[1]}:${m[2]}`;
}

/** The table of a view (wide: with PORT). */
export function membersTable(v: MembersView, wide: boolean): string {
  const rows: string[][] = 'members' in v
    ? v.members.map((m) => [m.name, m.address, ...(wide ? [String(m.port)] : []), m.state, String(m.incarnation)])
    : v.alive.map((n) => [n, '-', ...(wide ? ['-'] : []), 'alive', '-']);
  const head = ['NAME', 'ADDRESS', ...(wide ? ['PORT'] : []), 'STATE', 'INCARNATION'];
  const all = [head, ...rows];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const lines = all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]! + 3))).join(''));
  const note = 'members' in v ? '' : 'memberlist is off on this speaker: every Node counts as a live speaker\n';
  return note + lines.join('\n') + '\n';
}

/** Reads `/debug/members`; throws UserError (exit 3) naming the speaker when that fails. */
export async function fetchMembers(speaker: string, timeoutMs = 5000): Promise<MembersView> {
  const base = speakerURL(speaker);
  let res: Response;
  try {
    res = await fetch(`${base}/debug/members`, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new UserError(`cannot reach speaker ${speaker}: ${cause?.code ?? cause?.message ?? (err as Error).message}`, EXIT_UNREACHABLE);
  }
  if (!res.ok) throw new UserError(`speaker ${speaker}: GET /debug/members answered ${res.status}`, EXIT_UNREACHABLE);
  try {
    const v = await res.json() as MembersView;
    if (('members' in v && Array.isArray(v.members)) || ('alive' in v && Array.isArray(v.alive))) return v;
  } catch {
    // falls through
  }
  throw new UserError(`speaker ${speaker}: GET /debug/members did not answer a member view`, EXIT_UNREACHABLE);
}

/** Registers `members` on `program`. */
export function registerMembers(program: Command): void {
  const cmd = program
    .command('members')
    .description("print a running speaker's memberlist view (from its metrics port)")
    .requiredOption('--speaker <host:port>', "the speaker's metrics address (--metrics-bind-address and --port)")
    .addHelpText('after', '\nExample:\n  metallb-ts members --speaker 10.0.0.5:7472 -o wide');
  addOutputOption(cmd);
  cmd.action(async (opts: { speaker: string; output: OutputFormat }) => {
    const view = await fetchMembers(opts.speaker);
    const { writeResult } = await import('../render/output.ts');
    writeResult(opts.output, view, (wide) => membersTable(view, wide));
  });
}
