/**
 * Human renderings of `explain` and `whois` results (kubectl-describe-like sections and tables).
 * They print the core's decision objects; nothing here re-derives a decision.
 */
import type { ChalkInstance } from 'chalk';
import type { Explanation, Finding, SpeakersSource, WhoisResult } from '../core/explain/index.ts';
import type { SpeakerViewOrigin } from '../kube/speaker-view.ts';
import { palette } from './color.ts';
import { NONE, PENDING, renderTable } from './table.ts';
import { escapeControl } from './text.ts';

/** Where `explain` read the cluster state: the live API server or snapshot files (its `Source` line). */
export type ExplainSource = { kind: 'live'; server: string } | { kind: 'files'; files: readonly string[] };

function field(label: string, value: string): string {
  return `${(label + ':').padEnd(14)}${value}\n`;
}

function verdict(decision: string, c: ChalkInstance): string {
  return decision === 'announce' ? c.green(decision) : c.yellow(decision);
}

function list(xs: readonly string[], max: number): string {
  return xs.length <= max ? xs.join(', ') : `${xs.slice(0, max).join(', ')} and ${xs.length - max} more`;
}

/** The `speakers` of `explain`/`whois` output: the core's source and nodes, and the command's `from` / `fallback`. */
export interface SpeakersReport {
  readonly source: SpeakersSource;
  readonly nodes: readonly string[] | null;
  readonly from?: SpeakerViewOrigin;
  readonly fallback?: string;
}

/**
 * The value of the `Speakers` line: how many speakers are alive and which, and which view that is
 * (`memberlist of the speaker on node-a (pod metallb-system/speaker-x, through the API server)`,
 * `memberlist of speaker 10.0.0.5:9120 (node-a)`, `speaker-pods; no speaker reachable: ...`).
 * Names and reasons come from a speaker: control characters are escaped (escapeControl).
 */
export function speakersText(sp: SpeakersReport): string {
  const f = sp.from;
  const speaker = !f ? 'a speaker'
    : f.via === 'pod-proxy' ? `the speaker on ${f.node ? `node ${f.node}` : 'an unknown node'} (pod ${f.pod}, through the API server)`
      : `speaker ${f.address}${f.node ? ` (node ${f.node})` : ''}`;
  const what = sp.source === 'memberlist' ? `memberlist of ${speaker}`
    : sp.source === 'memberlist-disabled' ? `memberlist off on ${speaker}`
      : `${sp.source}${sp.fallback ? `; ${sp.fallback}` : ''}`;
  return escapeControl(sp.nodes === null ? `every node (${what})` : `${sp.nodes.length} alive (${what}): ${list(sp.nodes, 8)}`);
}

/** Findings as an indented block (message, then `fix:` line); control characters escaped (a finding may quote a speaker's member names). */
export function findingsText(findings: readonly Finding[], c: ChalkInstance = palette()): string {
  if (findings.length === 0) return '';
  const sev = (s: Finding['severity']) => (s === 'error' ? c.red(s) : s === 'warning' ? c.yellow(s) : s);
  let out = '\nFindings:\n';
  for (const f of findings) {
    out += `  ${sev(f.severity)} ${c.bold(f.id)}: ${escapeControl(f.message)}\n`;
    out += `    fix: ${escapeControl(f.fix)}\n`;
  }
  return out;
}

/**
 * `explain` for people: the allocation, the verdict, the service checks and the candidate trace,
 * one row per node, then findings. `wide` adds interfaces and full hash digests. With `e.source`,
 * a `Source` line names the live server or the snapshot files.
 */
export function explainText(e: Explanation & { source?: ExplainSource }, wide: boolean, c: ChalkInstance = palette()): string {
  const a = e.allocation;
  let out = field('Service', c.bold(e.service));
  if (e.source) out += field('Source', e.source.kind === 'live' ? `live cluster ${e.source.server}` : `snapshot ${e.source.files.join(', ')}`);
  const ips = a.ips.length > 0 ? a.ips.join(', ') : PENDING;
  out += field('Addresses', `${ips} (${a.status}${a.pool ? `, pool ${a.pool}` : ''})${a.reason ? `: ${a.reason}` : ''}`);
  const ads = e.l2.advertisements.length > 0 ? ` (L2Advertisements: ${e.l2.advertisements.join(', ')})` : '';
  out += field('Mode', `${e.mode}${ads}`);
  out += field('Speakers', speakersText(e.speakers as SpeakersReport));
  const announced = e.announcer ?? (e.bgpAnnouncers.length > 0 ? e.bgpAnnouncers.join(', ') : null);
  out += field('Announced by', announced ? c.green(announced) : c.red('nobody'));
  out += field('Why', escapeControl(whyLine(e)));
  if (e.l2Status.length > 0) {
    out += field('L2 status', e.l2Status.map((s) => `${s.node}${s.interfaces.length ? ` on ${s.interfaces.join(', ')}` : ''}`).join('; ') + ' (ServiceL2Status)');
  }

  if (e.l2.checks.length > 0) {
    out += '\nChecks:\n';
    for (const ch of e.l2.checks) out += `  ${ch.ok ? c.green('ok  ') : c.red('FAIL')} ${ch.check.padEnd(10)} ${ch.detail}\n`;
  }
  if (e.l2.trace.length > 0 && e.mode !== 'bgp' && e.allocation.status !== 'ignored') {
    out += `\nCandidates${e.l2.hashedIP ? ` for ${e.l2.hashedIP}` : ''}:\n`;
    out += indent(renderTable(
      ['step', 'kept', 'dropped'],
      e.l2.trace.map((t) => [
        t.step,
        `${t.kept.length}`,
        escapeControl(t.dropped.length > 0 ? dropSummary(t.dropped, wide) : t.note ?? ''),
      ]),
    ));
  }
  if (e.hashOrder.length > 0) {
    out += `\nHash order (sha256 of node#ip, first wins): ${e.hashOrder.map((h) => `${h.node} (${wide ? h.digest : h.digest.slice(0, 8)})`).join(', ')}\n`;
  }
  out += '\n';
  const cols = ['node', 'decision', 'detail', ...(wide ? ['interfaces'] : [])];
  out += renderTable(cols, e.nodes.map((n) => [
    n.node, verdict(n.decision, c), escapeControl(n.detail),
    ...(wide ? [n.interfaces === null ? NONE : n.interfaces === 'all' ? 'all' : n.interfaces.join(',')] : []),
  ]), 'No nodes in the cluster state.');
  out += findingsText(e.findings, c);
  return out;
}

/** Dropped candidates grouped by reason: `lab-cp-1, lab-cp-2: labelled ...`. */
function dropSummary(dropped: ReadonlyArray<{ node: string; why: string }>, wide: boolean): string {
  const byWhy = new Map<string, string[]>();
  for (const d of dropped) byWhy.set(d.why, [...(byWhy.get(d.why) ?? []), d.node]);
  return [...byWhy].map(([why, nodes]) => `${wide ? nodes.join(', ') : list(nodes, 8)}: ${why}`).join('; ');
}

/** The one-line summary: the L2 election's, the BGP outcome in BGP mode, or why MetalLB ignores the Service. */
function whyLine(e: Explanation): string {
  if (e.allocation.status === 'ignored') return e.allocation.reason ?? 'MetalLB does not handle this Service';
  const bgp = e.bgpAnnouncers.length > 0
    ? `${e.bgpAnnouncers.join(', ')} advertise${e.bgpAnnouncers.length === 1 ? 's' : ''} ${e.allocation.ips.join(', ')} to their BGP peers`
    : `no node advertises ${e.allocation.ips.join(', ') || 'the Service'} to a BGP peer`;
  if (e.mode === 'bgp') return bgp;
  if (e.mode === 'layer2+bgp') return `${e.l2.detail}; ${bgp}`;
  return e.l2.detail;
}

function indent(text: string): string {
  return text.split('\n').map((l) => (l ? `  ${l}` : l)).join('\n');
}

/** `whois` for people: the address and pool, then one row per Service holding it. */
export function whoisText(w: WhoisResult & { speakers?: SpeakersReport }, wide: boolean, c: ChalkInstance = palette()): string {
  let out = field('IP', c.bold(w.ip));
  out += field('Pool', w.pool ?? `${NONE} (no IPAddressPool contains it)`);
  if (w.speakers) out += field('Speakers', speakersText(w.speakers));
  out += '\n';
  const cols = ['service', 'mode', 'announced-by', 'l2-status', 'problems', ...(wide ? ['all-ips', 'pool'] : [])];
  const rows = w.holders.map((h) => {
    const by = h.announcer ?? (h.bgpAnnouncers.length > 0 ? h.bgpAnnouncers.join(',') : undefined);
    return [
      h.service, h.mode, by ? c.green(by) : undefined,
      h.l2Status.map((s) => s.node + (s.interfaces.length > 0 ? ` (${s.interfaces.join(',')})` : '')).join(', '),
      escapeControl(h.problems.join('; ')),
      ...(wide ? [h.ips.join(','), h.pool] : []),
    ];
  });
  out += renderTable(cols, rows, 'No Service holds this address.');
  return out;
}
