/**
 * The human rendering of `whatif`: the verdict line, the change as understood, then a table of the
 * Services that change (unchanged ones are only counted), then notes. It prints the core's
 * WhatIfReport; nothing here re-derives a decision.
 */
import type { ServiceChangeKind, ServiceState, ServiceWhatIf, WhatIfReport } from '../core/explain/whatif.ts';
import { palette, type Palette } from './color.ts';
import { NONE, renderTable } from './table.ts';
import { escapeControl } from '../core/text.ts';

/** The longest line aimed at without `-o wide` (the WHY column wraps to it). */
const MAX_LINE = 200;

/** Notes shown without `-o wide`; the rest are counted. */
const MAX_NOTES = 5;

const WORDS: Record<ServiceChangeKind, string> = {
  losesAddress: 'loses address',
  losesAnnouncer: 'loses announcer',
  changesAddress: 'changes address',
  changesAnnouncer: 'changes announcer',
  changesPool: 'changes pool',
  getsAddress: 'gets address',
  getsAnnouncer: 'gets announcer',
  added: 'new',
  deleted: 'deleted',
  unchanged: 'unchanged',
};

/** The CHANGE cell: every change of the Service, the breaking ones in red. */
function changeText(s: ServiceWhatIf, c: Palette): string {
  return s.changes.map((k) => (k === 'losesAddress' || k === 'losesAnnouncer' ? c.red(WORDS[k]) : WORDS[k])).join(', ');
}

/** `a` when both sides say the same, else `a → b`; `<none>` for an empty side. */
function arrow(before: string | null, after: string | null): string {
  const b = before || NONE;
  const a = after || NONE;
  return b === a ? b : `${b} → ${a}`;
}

/** Who announces: the L2 node, and/or `BGP: node, node` (with `-o wide`, each node's peers in parentheses). */
export function announcerText(s: ServiceState | null, wide: boolean): string | null {
  if (!s) return null;
  const parts: string[] = [];
  if (s.announcer) parts.push(s.announcer);
  if (s.bgp.length > 0) {
    parts.push(`BGP: ${s.bgp.map((n) => (wide ? `${n.node} (${n.peers.join(', ')})` : n.node)).join(', ')}`);
  }
  return parts.length > 0 ? escapeControl(parts.join('; ')) : null;
}

/** The ANNOUNCER cell; when only the BGP peers change, the peers are named even without `-o wide`. */
function announcerCell(s: ServiceWhatIf, wide: boolean): string {
  const short = arrow(announcerText(s.before, wide), announcerText(s.after, wide));
  if (wide || !s.changes.includes('changesAnnouncer') || short.includes(' → ')) return short;
  return arrow(announcerText(s.before, true), announcerText(s.after, true));
}

function ipsText(s: ServiceState | null): string | null {
  return s && s.ips.length > 0 ? s.ips.join(',') : null;
}

/** The `If:` line: the change as the core understood it. */
export function changeLine(r: WhatIfReport): string {
  const parts: string[] = [];
  const ch = r.change;
  if (ch.nodesDown.length > 0) {
    const sp = r.speakers;
    const alive = sp.after === null ? 'memberlist disabled: no speaker notices' : `${sp.after.length} speaker${sp.after.length === 1 ? '' : 's'} left alive`;
    parts.push(`${ch.nodesDown.join(', ')} ${ch.nodesDown.length === 1 ? 'goes' : 'go'} down (${alive})`);
  }
  for (const l of ch.labels) parts.push(`kubectl label node ${l.node} ${l.value === null ? `${l.key}-` : `${l.key}=${l.value}`}`);
  if (ch.ignoreExcludeLB.before !== ch.ignoreExcludeLB.after) parts.push(`the speakers run ${ch.ignoreExcludeLB.after ? 'with' : 'without'} --ignore-exclude-lb`);
  const objects = (verb: string, refs: readonly string[]) => `${verb} ${refs.length <= 3 ? refs.join(', ') : `${refs.slice(0, 3).join(', ')} and ${refs.length - 3} more`}`;
  if (ch.applied.length > 0) parts.push(objects('apply', ch.applied));
  if (ch.deleted.length > 0) parts.push(objects('delete', ch.deleted));
  let line = `If: ${parts.join('; ')}`;
  if (r.reallocated) line += ' (the controller reprocesses every Service)';
  return escapeControl(line);
}

/**
 * The text output: verdict, `If:` line, the table of changed Services (SERVICE CHANGE EXTERNAL-IP
 * ANNOUNCER WHY; `-o wide` adds POOL and MODE and names each BGP node's peers), then notes.
 */
export function whatIfText(r: WhatIfReport, wide: boolean, c: Palette = palette()): string {
  const verdict = r.breaks ? c.red(r.verdict) : r.verdict;
  let out = `${verdict}\n${changeLine(r)}\n`;
  const changed = r.services.filter((s) => s.change !== 'unchanged');
  if (changed.length > 0) {
    const columns = ['SERVICE', 'CHANGE', 'EXTERNAL-IP', ...(wide ? ['POOL', 'MODE'] : []), 'ANNOUNCER', { header: 'WHY', placeholder: '' }];
    const rows = changed.map((s) => [
      s.service,
      changeText(s, c),
      arrow(ipsText(s.before), ipsText(s.after)),
      ...(wide ? [arrow(s.before?.pool ?? null, s.after?.pool ?? null), arrow(s.before?.mode ?? null, s.after?.mode ?? null)] : []),
      announcerCell(s, wide),
      s.after?.why && (s.after.ips.length === 0 || (s.after.announcer === null && s.after.bgp.length === 0)) ? escapeControl(s.after.why) : '',
    ]);
    out += '\n' + renderTable(columns, rows, undefined, wide ? {} : { maxWidth: MAX_LINE });
  }
  if (r.notes.length > 0) {
    const shown = wide ? r.notes : r.notes.slice(0, MAX_NOTES);
    out += '\nNotes:\n' + shown.map((n) => `  ${escapeControl(n)}\n`).join('');
    if (shown.length < r.notes.length) out += `  and ${r.notes.length - shown.length} more (-o wide lists them)\n`;
  }
  return out;
}
