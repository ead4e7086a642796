/**
 * Human renderings of `explain` and `whois` results (kubectl-describe-like sections and tables).
 * They print the core's decision objects; nothing here re-derives a decision.
 */
import type { BGPNodeView, Explanation, Finding, PeerView, SpeakersSource, WhoisResult } from '../core/explain/index.ts';
import { reportedSummary } from '../core/explain/reported.ts';
import type { SpeakerViewOrigin } from '../kube/speaker-view.ts';
import { palette, type Palette } from './color.ts';
import { NONE, PENDING, renderTable } from './table.ts';
import { escapeControl } from '../core/text.ts';

/** The longest line the text output aims at without `-o wide` (tables wrap their last column to it). */
const MAX_LINE = 200;

/** Where `explain` read the cluster state: the live API server or snapshot files (its `Source` line). */
export type ExplainSource = { kind: 'live'; server: string } | { kind: 'files'; files: readonly string[] };

function field(label: string, value: string): string {
  return `${(label ? `${label}:` : '').padEnd(14)}${value}\n`;
}

function verdict(decision: string, c: Palette): string {
  return decision === 'announce' ? c.green(decision) : c.yellow(decision);
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
export function speakersText(sp: SpeakersReport, wide = false): string {
  const f = sp.from;
  const speaker = !f
    ? 'a speaker'
    : f.via === 'pod-proxy'
      ? `the speaker on ${f.node ? `node ${f.node}` : 'an unknown node'} (pod ${f.pod}, through the API server)`
      : `speaker ${f.address}${f.node ? ` (node ${f.node})` : ''}`;
  const what = sp.source === 'memberlist' ? `memberlist of ${speaker}` : sp.source === 'memberlist-disabled' ? `memberlist off on ${speaker}` : `${sp.source}${sp.fallback ? `; ${sp.fallback}` : ''}`;
  return escapeControl(sp.nodes === null ? `every node (${what})` : sp.nodes.length === 0 ? `none alive (${what})` : `${sp.nodes.length} alive (${what}): ${cutNames(sp.nodes, wide)}`);
}

/** Findings as an indented block (message, then `fix:` line); control characters escaped (a finding may quote a speaker's member names). */
export function findingsText(findings: readonly Finding[], c: Palette = palette()): string {
  if (findings.length === 0) return '';
  const sev = (s: Finding['severity']) => (s === 'error' ? c.red(s) : s === 'warning' ? c.yellow(s) : s);
  let out = '\nFindings:\n';
  for (const f of findings) {
    out += `  ${sev(f.severity)} ${c.bold(f.id)}: ${escapeControl(f.message)}\n`;
    out += `    fix: ${escapeControl(f.fix)}\n`;
  }
  return out;
}

/** The `Config` line: which speakers reject their configuration (null when every speaker accepts it). */
function configLine(e: Explanation, wide: boolean): string | null {
  const rejected = e.configuration.speakers.filter((g) => g.status === 'rejected');
  if (rejected.length === 0) return null;
  const total = e.configuration.speakers.filter((g) => g.status !== 'noNode').reduce((n, g) => n + g.nodes.length, 0);
  const byError = new Map<string, string[]>();
  for (const g of rejected) byError.set(g.error ?? '', [...(byError.get(g.error ?? '') ?? []), ...g.nodes]);
  const count = [...byError.values()].reduce((n, xs) => n + xs.length, 0);
  if (count === total) return `rejected by every speaker: ${[...byError.keys()].join('; ')}`;
  return (
    [...byError].map(([error, nodes]) => `rejected by the speaker${nodes.length === 1 ? '' : 's'} of ${cutNames(nodes, wide)} (${nodes.length} of ${total} nodes): ${error}`).join('; ')
    + '; the other speakers accept it'
  );
}

/**
 * Names for a line of text: as many as fit in `maxChars` (at most `maxCount`), then `and N more`;
 * every name when `wide`.
 */
export function cutNames(names: readonly string[], wide: boolean, maxCount = 8, maxChars = 100): string {
  if (wide || names.length <= 1) return names.join(', ');
  let out = '';
  let shown = 0;
  for (const n of names) {
    const next = shown === 0 ? n : `${out}, ${n}`;
    if (shown >= maxCount || (shown > 0 && next.length > maxChars)) break;
    out = next;
    shown++;
  }
  return shown === names.length ? out : `${out} and ${names.length - shown} more`;
}

/** The verdict in a few words: announced by whom, nobody, pending, ignored. */
function verdictLine(e: Explanation, c: Palette): string {
  const a = e.allocation;
  if (a.status === 'ignored') return c.yellow('ignored: MetalLB does not handle this Service');
  if (a.ips.length === 0) return c.red('pending: the controller gives it no address, so nobody announces it');
  const ips = a.ips.join(', ');
  // The elected node's speaker recorded announceFailed: elected, but nothing answers there.
  const failed = e.findings.some((f) => f.id === 'announce-failed');
  const l2 = e.announcer
    ? failed
      ? `${c.red('elected')} ${e.announcer} over layer2 ${c.red('but its speaker answers on no interface (announceFailed)')}`
      : `announced by ${c.green(e.announcer)} over layer2`
    : null;
  const bgp = e.bgpAnnouncers.length > 0 ? `advertised over BGP by ${c.green(cutNames(e.bgpAnnouncers, false, 8, 80))}` : null;
  const predicted = a.status === 'predicted' ? ' (predicted: not in its status yet)' : '';
  if (l2 || bgp) return `${[l2, bgp].filter(Boolean).join(' and ')}: ${ips}${predicted}`;
  return `${c.red('nobody announces')} ${ips}${predicted}`;
}

/** Rows with the same decision, detail and interfaces, grouped: the node names, then the row. */
function groupedNodes(e: Explanation): Array<{ nodes: string[]; decision: string; detail: string; interfaces: string }> {
  const groups = new Map<string, { nodes: string[]; decision: string; detail: string; interfaces: string }>();
  for (const n of e.nodes) {
    const interfaces = n.interfaces === null ? NONE : n.interfaces === 'all' ? 'all' : n.interfaces.join(',');
    const key = JSON.stringify([n.decision, n.detail, interfaces]);
    const g = groups.get(key);
    if (g) g.nodes.push(n.node);
    else groups.set(key, { nodes: [n.node], decision: n.decision, detail: n.detail, interfaces });
  }
  return [...groups.values()];
}

/** The controller's events for the Service in the dry run, as `kubectl describe` lists them (type, reason, count, message). */
function eventsText(e: Explanation, wide: boolean): string {
  const events = e.allocation.dryRun?.events ?? [];
  if (events.length === 0) return '';
  const max = wide ? Infinity : 5;
  const shown = events.slice(0, max);
  let out = '\nController events (dry run, as kubectl describe lists them):\n';
  out += indent(
    renderTable(
      ['type', 'reason', 'count', 'message'],
      shown.map((x) => [x.type, x.reason, x.count, escapeControl(x.message)]),
    ),
  );
  if (shown.length < events.length) out += `  … and ${events.length - shown.length} more (-o wide shows every one)\n`;
  return out;
}

/**
 * `explain` for people, the answer first: the verdict, why (the root cause: the most severe
 * finding, else the election's summary) and the fix; then the allocation, the mode, the speakers
 * and configurations, the service checks, the candidate trace, the hash order, the per-node
 * decisions (identical rows grouped), the BGP decisions, the controller's events and the findings.
 * Long lists are cut with a count; `wide` prints them whole, adds interfaces and full digests.
 * With `e.source`, a `Source` line names the live server or the snapshot files.
 */
export function explainText(e: Explanation & { source?: ExplainSource }, wide: boolean, c: Palette = palette()): string {
  const a = e.allocation;
  let out = field('Service', c.bold(e.service));
  out += field('Verdict', verdictLine(e, c));
  const firstError = e.findings.find((f) => f.severity === 'error');
  out += field('Why', escapeControl(firstError ? firstError.message : whyLine(e)));
  if (firstError) out += field('Fix', escapeControl(firstError.fix));
  else {
    const warning = e.findings.find((f) => f.severity === 'warning');
    if (warning) out += field('Warning', escapeControl(`${warning.id}: ${warning.message}`)) + field('Fix', escapeControl(warning.fix));
  }
  const more = e.findings.filter((f) => f.severity !== 'info').length - 1;
  if (more > 0) out += field('', `(${more} more finding${more === 1 ? '' : 's'} below)`);
  if (e.source) out += field('Source', e.source.kind === 'live' ? `live cluster ${e.source.server}` : `snapshot ${e.source.files.join(', ')}`);
  const ips = a.ips.length > 0 ? a.ips.join(', ') : PENDING;
  out += field('Addresses', `${ips} (${a.status}${a.pool ? `, pool ${a.pool}` : ''})${a.reason ? `: ${escapeControl(a.reason)}` : ''}`);
  const ads = e.l2 && e.l2.advertisements.length > 0 ? ` (L2Advertisements: ${cutNames(e.l2.advertisements, wide)})` : '';
  out += field('Mode', `${e.mode}${ads}`);
  out += field('Speakers', speakersText(e.speakers as SpeakersReport, wide));
  const config = configLine(e, wide);
  if (config) out += field('Config', escapeControl(config));
  const nodeCount = e.configuration.speakers.filter((g) => g.status !== 'noNode').reduce((n, g) => n + g.nodes.length, 0);
  const reported = reportedSummary(e.configuration.reported, (names) => (names.length === nodeCount && nodeCount > 1 ? `every node (${nodeCount})` : cutNames(names, wide, 8, 72)));
  if (reported) out += field('Reported', escapeControl(`ConfigurationState ${reported}`));
  if (e.l2Status.length > 0) {
    out += field('L2 status', e.l2Status.map((s) => `${s.node}${s.interfaces.length ? ` on ${s.interfaces.join(', ')}` : ''}`).join('; ') + ' (ServiceL2Status)');
  }
  if (e.failover) out += field('Failover', escapeControl(e.failover.text));

  const checks = e.l2?.checks ?? e.bgp?.checks ?? [];
  if (checks.length > 0) {
    out += '\nChecks:\n';
    for (const ch of checks) out += `  ${ch.ok ? c.green('ok  ') : c.red('FAIL')} ${ch.check.padEnd(10)} ${ch.detail}\n`;
  }
  if (e.l2 && e.l2.trace.length > 0 && e.mode !== 'bgp' && e.allocation.status !== 'ignored') {
    out += `\nCandidates${e.l2.hashedIP ? ` for ${e.l2.hashedIP}` : ''}:\n`;
    out += indent(
      renderTable(
        ['step', 'kept', 'dropped'],
        e.l2.trace.map((t) => [t.step, `${t.kept.length}`, escapeControl(t.dropped.length > 0 ? dropSummary(t.dropped, wide) : (t.note ?? ''))]),
        undefined,
        wide ? {} : { maxWidth: MAX_LINE - 2 },
      ),
    );
  }
  if (e.hashOrder.length > 0) {
    const entries = e.hashOrder.map((h) => `${h.node} (${wide ? h.digest : h.digest.slice(0, 8)})`);
    const shown = cutNames(entries, wide, 8, 120);
    out += `\nHash order (sha256 of node#ip, first wins): ${escapeControl(shown)}${shown.length < entries.join(', ').length ? ' (-o wide shows every one)' : ''}\n`;
  }
  const bgpSection = e.bgp && (e.mode === 'bgp' || e.mode === 'layer2+bgp') && e.allocation.status !== 'ignored';
  if (!(bgpSection && e.mode === 'bgp')) {
    out += '\n';
    const groups = groupedNodes(e);
    const shown = wide ? groups : groups.slice(0, 20);
    const cols = [groups.length < e.nodes.length ? 'nodes' : 'node', 'decision', 'detail', ...(wide ? ['interfaces'] : [])];
    out += renderTable(
      cols,
      shown.map((g) => [escapeControl(cutNames(g.nodes, wide, 8, 72)), verdict(g.decision, c), escapeControl(g.detail), ...(wide ? [g.interfaces] : [])]),
      'No nodes in the cluster state.',
      wide ? {} : { maxWidth: MAX_LINE },
    );
    if (shown.length < groups.length) out += `… and ${groups.length - shown.length} more groups of nodes (-o wide shows every one)\n`;
  }
  if (bgpSection && e.bgp) out += `\nBGP, per node and peer:\n${bgpNodesText(e.bgp.nodes, e.bgp.peers, wide, c)}`;
  out += eventsText(e, wide);
  out += findingsText(e.findings, c);
  return out;
}

/** One peer's line: what it gets, or why nothing. */
function peerText(p: PeerView): string {
  if (p.prefixes.length > 0) {
    const got = p.prefixes
      .map((x) => {
        const attrs = [...(x.localPref ? [`localPref ${x.localPref}`] : []), ...(x.communities.length ? [`communities ${x.communities.join(' ')}`] : [])];
        return attrs.length ? `${x.prefix} (${attrs.join('; ')})` : x.prefix;
      })
      .join(', ');
    return p.why ? `${got}; ${p.why}` : got;
  }
  return `nothing: ${p.why ?? p.outcome}`;
}

/**
 * BGP decisions grouped by identical rows (same decision, detail and per-peer outcome):
 * `node-a, node-b: announce to router-a`, then one line per peer with what it gets or why
 * nothing (peers getting nothing for the same reason together; `allPeers` minus those listed
 * have no session there), and the advertisements whose prefixes reach no peer. Lists of nodes and peers are cut at 8 names and groups at 20 unless
 * `wide`.
 */
export function bgpNodesText(nodes: readonly BGPNodeView[], allPeers: readonly string[], wide: boolean, c: Palette = palette()): string {
  if (nodes.length === 0) return '  No nodes in the cluster state.\n';
  const groups = new Map<string, { nodes: string[]; view: BGPNodeView }>();
  for (const n of nodes) {
    const key = JSON.stringify([n.decision, n.detail, n.peers, n.undelivered]);
    const g = groups.get(key);
    if (g) g.nodes.push(n.node);
    else groups.set(key, { nodes: [n.node], view: n });
  }
  const max = wide ? Infinity : 8;
  const cut = (xs: readonly string[]): string => (xs.length <= max ? xs.join(', ') : `${xs.slice(0, max).join(', ')} and ${xs.length - max} more`);
  const all = [...groups.values()];
  const shown = wide ? all : all.slice(0, 20);
  let out = '';
  for (const { nodes: names, view } of shown) {
    const who = cut(names);
    if (view.decision !== 'announce') {
      out += `  ${who}: ${verdict(view.decision, c)}: ${escapeControl(view.detail)}\n`;
      continue;
    }
    const reached = view.peers.filter((p) => p.prefixes.length > 0).map((p) => p.peer);
    out += `  ${who}: ${verdict('announce', c)} ${reached.length ? `to ${cut(reached)}` : c.red('to no peer')}\n`;
    const lines = new Map<string, { peers: PeerView[]; text: string }>();
    for (const p of view.peers) {
      if (p.outcome === 'notAnnounced') continue;
      const text = peerText(p);
      const key = p.prefixes.length > 0 ? `peer\u0000${p.peer}` : text; // every peer that gets something on its own line
      const line = lines.get(key);
      if (line) line.peers.push(p);
      else lines.set(key, { peers: [p], text });
    }
    for (const { peers, text } of lines.values()) {
      const label = peers.length === 1 ? `${peers[0]!.peer}${peers[0]!.address ? ` (${peers[0]!.address})` : ''}` : cut(peers.map((p) => p.peer));
      out += `    ${escapeControl(label)}: ${escapeControl(text)}\n`;
    }
    const listed = new Set(view.peers.map((p) => p.peer));
    const sessionless = allPeers.filter((p) => !listed.has(p));
    if (sessionless.length > 0) out += `    ${escapeControl(cut(sessionless))}: nothing: no session on ${names.length === 1 ? 'this node' : 'these nodes'} (nodeSelectors)\n`;
    for (const u of view.undelivered) {
      out += `    ${escapeControl(`BGPAdvertisement ${u.advertisement}`)}: ${escapeControl(`${u.prefixes.join(', ')} to no peer: its spec.peers (${u.specPeers.join(', ')}) names no BGPPeer with a session on ${names.length === 1 ? 'this node' : 'these nodes'}`)}\n`;
    }
  }
  if (shown.length < all.length) out += `  … and ${all.length - shown.length} more groups of nodes (-o wide shows every one)\n`;
  return out;
}

/** Dropped candidates grouped by reason: `lab-cp-1, lab-cp-2: labelled ...`. */
function dropSummary(dropped: ReadonlyArray<{ node: string; why: string }>, wide: boolean): string {
  const byWhy = new Map<string, string[]>();
  for (const d of dropped) byWhy.set(d.why, [...(byWhy.get(d.why) ?? []), d.node]);
  return [...byWhy].map(([why, nodes]) => `${cutNames(nodes, wide, 8, 60)}: ${why}`).join('; ');
}

/** The one-line summary: the L2 election's, the BGP outcome in BGP mode, or why nobody can announce. */
function whyLine(e: Explanation): string {
  if (e.allocation.status === 'ignored') return e.allocation.reason ?? 'MetalLB does not handle this Service';
  const rejected = e.configuration.speakers.filter((g) => g.status === 'rejected');
  if (!e.l2 && rejected.length > 0) {
    const errors = [...new Set(rejected.map((g) => g.error ?? ''))].join('; ');
    const f = e.ifFixed;
    const hint = f ? `; once fixed (${f.assuming}): ${f.announcer ?? (f.bgpAnnouncers.length ? f.bgpAnnouncers.join(', ') : 'nobody')} would announce it` : '';
    return `every speaker rejects the configuration (${errors}): none applies it, each keeps running the configuration it accepted last, which a snapshot cannot show${hint}`;
  }
  if (!e.l2) return 'nobody announces: no speaker runs (the snapshot has no Node object)';
  const ips = e.allocation.ips.join(', ');
  const bgp =
    e.bgpAnnouncers.length > 0 ? `${e.bgpAnnouncers.join(', ')} advertise${e.bgpAnnouncers.length === 1 ? 's' : ''} ${ips} to their BGP peers` : `no node advertises ${ips || 'the Service'} to a BGP peer`;
  if (e.mode === 'bgp') return bgp;
  let l2 = e.l2?.detail ?? '';
  const winner = e.l2?.winner;
  if (winner && e.announcer === null && e.l2?.hashedIP) {
    const g = rejected.find((x) => x.nodes.includes(winner));
    if (g) l2 = `nobody announces: ${winner} wins the hash of ${e.l2.hashedIP} but its speaker rejects the configuration: ${g.error}`;
  }
  if (e.mode === 'layer2+bgp') return `${l2}; ${bgp}`;
  return l2;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => (l ? `  ${l}` : l))
    .join('\n');
}

/** `whois` for people: the address and pool, one row per Service holding it, then the BGP view of its prefix. */
export function whoisText(w: WhoisResult & { speakers?: SpeakersReport }, wide: boolean, c: Palette = palette()): string {
  let out = field('IP', c.bold(w.ip));
  out += field('Pool', w.pool ?? `${NONE} (no IPAddressPool contains it)`);
  for (const x of w.externalIPs) out += field('External IP', escapeControl(`in spec.externalIPs of ${x.service} (${x.type}): ${x.note}`));
  if (w.speakers) out += field('Speakers', speakersText(w.speakers));
  out += '\n';
  const cols = ['service', 'mode', 'announced-by', 'l2-status', 'problems', ...(wide ? ['all-ips', 'pool'] : [])];
  const rows = w.holders.map((h) => {
    const by = h.announcer ?? (h.bgpAnnouncers.length > 0 ? h.bgpAnnouncers.join(',') : undefined);
    return [
      h.service,
      h.mode,
      by ? c.green(by) : undefined,
      h.l2Status.map((s) => s.node + (s.interfaces.length > 0 ? ` (${s.interfaces.join(',')})` : '')).join(', '),
      escapeControl(h.problems.join('; ')),
      ...(wide ? [h.ips.join(','), h.pool] : []),
    ];
  });
  out += renderTable(cols, rows, w.externalIPs.length > 0 ? 'No Service holds this address in its status.' : 'No Service holds this address.');
  for (const h of w.holders) {
    for (const x of h.warnings) out += `\n${field('Warning', escapeControl(`${h.service}: ${x.id}: ${x.message}`))}${field('Fix', escapeControl(x.fix))}`;
  }

  for (const h of w.holders) {
    if (!h.bgp) continue;
    out += `\nBGP for ${w.ip} (${h.service}), per node and peer:\n${bgpNodesText(h.bgp.nodes, h.bgp.peers, wide, c)}`;
  }
  return out;
}
