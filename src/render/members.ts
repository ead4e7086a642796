/**
 * The `members` table for people: a running speaker's memberlist view, NAME ADDRESS STATE
 * INCARNATION (wide adds PORT).
 */
import { escapeControl } from '../core/text.ts';
import type { MembersView, SpeakerViewOrigin } from '../kube/speaker-view.ts';

/**
 * The table of a view (wide: with PORT); `from`: a first line naming the discovered speaker pod.
 * Strings from the speaker are printed with their control characters escaped (escapeControl).
 */
export function membersTable(v: MembersView, wide: boolean, from?: SpeakerViewOrigin): string {
  const rows: string[][] = (
    'members' in v ? v.members.map((m) => [m.name, m.address, ...(wide ? [String(m.port)] : []), m.state, String(m.incarnation)]) : v.alive.map((n) => [n, '-', ...(wide ? ['-'] : []), 'alive', '-'])
  ).map((r) => r.map(escapeControl));
  const head = ['NAME', 'ADDRESS', ...(wide ? ['PORT'] : []), 'STATE', 'INCARNATION'];
  const all = [head, ...rows];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const lines = all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]! + 3))).join(''));
  const origin = from?.pod ? escapeControl(`speaker pod ${from.pod}${from.node ? ` on node ${from.node}` : ''} (${from.address}, through the API server)`) + '\n' : '';
  const note = 'members' in v ? '' : 'memberlist is off on this speaker: every Node counts as a live speaker\n';
  return origin + note + lines.join('\n') + '\n';
}
