/**
 * Human renderings of `explain` and `whois` results (kubectl-describe-like sections and tables).
 * They print the core's decision objects; nothing here re-derives a decision.
 */
import type { ChalkInstance } from 'chalk';
import type { BGPNodeView, Explanation, Finding, PeerView, SpeakersSource, WhoisResult } from '../core/explain/index.ts';
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

/** The `Config` line: which speakers reject their configuration (null when every speaker accepts it). */
function configLine(e: Explanation): string | null {
  const rejected = e.configuration.speakers.filter((g) => g.status === 'rejected');
  if (rejected.length === 0) return null;
  const total = e.configuration.speakers.filter((g) => g.status !== 'noNode').reduce((n, g) => n + g.nodes.length, 0);
  const byError = new Map<string, string[]>();
  for (const g of rejected) byError.set(g.error ?? '', [...(byError.get(g.error ?? '') ?? []), ...g.nodes]);
  const count = [...byError.values()].reduce((n, xs) => n + xs.length, 0);
  if (count === total) return `rejected by every speaker: ${[...byError.keys()].join('; ')}`;
  return [...byError].map(([error, nodes]) => `rejected by the speaker${nodes.length === 1 ? '' : 's'} of ${list(nodes, 8)} (${nodes.length} of ${total} nodes): ${error}`).join('; ')
    + '; the other speakers accept it';
}

/**
 * `explain` for people: the allocation, the verdict, why and the fix first; then the service
 * checks, the candidate trace, one row per node (Layer 2) and the BGP decisions grouped by
 * identical rows, then findings. `wide` adds interfaces, full hash digests and complete lists.
 * With `e.source`, a `Source` line names the live server or the snapshot files.
 */
export function explainText(e: Explanation & { source?: ExplainSource }, wide: boolean, c: ChalkInstance = palette()): string {
  const a = e.allocation;
  let out = field('Service', c.bold(e.service));
  if (e.source) out += field('Source', e.source.kind === 'live' ? `live cluster ${e.source.server}` : `snapshot ${e.source.files.join(', ')}`);
  const ips = a.ips.length > 0 ? a.ips.join(', ') : PENDING;
  out += field('Addresses', `${ips} (${a.status}${a.pool ? `, pool ${a.pool}` : ''})${a.reason ? `: ${a.reason}` : ''}`);
  const ads = e.l2 && e.l2.advertisements.length > 0 ? ` (L2Advertisements: ${e.l2.advertisements.join(', ')})` : '';
  out += field('Mode', `${e.mode}${ads}`);
  out += field('Speakers', speakersText(e.speakers as SpeakersReport));
  const config = configLine(e);
  if (config) out += field('Config', escapeControl(config));
  const announced = e.announcer ?? (e.bgpAnnouncers.length > 0 ? e.bgpAnnouncers.join(', ') : null);
  out += field('Announced by', announced ? c.green(announced) : c.red('nobody'));
  out += field('Why', escapeControl(whyLine(e)));
  const firstError = e.findings.find((f) => f.severity === 'error');
  if (firstError) out += field('Fix', escapeControl(firstError.fix));
  if (e.l2Status.length > 0) {
    out += field('L2 status', e.l2Status.map((s) => `${s.node}${s.interfaces.length ? ` on ${s.interfaces.join(', ')}` : ''}`).join('; ') + ' (ServiceL2Status)');
  }

  const checks = e.l2?.checks ?? e.bgp?.checks ?? [];
  if (checks.length > 0) {
    out += '\nChecks:\n';
    for (const ch of checks) out += `  ${ch.ok ? c.green('ok  ') : c.red('FAIL')} ${ch.check.padEnd(10)} ${ch.detail}\n`;
  }
  if (e.l2 && e.l2.trace.length > 0 && e.mode !== 'bgp' && e.allocation.status !== 'ignored') {
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
  const bgpSection = e.bgp && (e.mode === 'bgp' || e.mode === 'layer2+bgp') && e.allocation.status !== 'ignored';
  if (!(bgpSection && e.mode === 'bgp')) {
    out += '\n';
    const cols = ['node', 'decision', 'detail', ...(wide ? ['interfaces'] : [])];
    out += renderTable(cols, e.nodes.map((n) => [
      n.node, verdict(n.decision, c), escapeControl(n.detail),
      ...(wide ? [n.interfaces === null ? NONE : n.interfaces === 'all' ? 'all' : n.interfaces.join(',')] : []),
    ]), 'No nodes in the cluster state.');
  }
  if (bgpSection && e.bgp) out += `\nBGP, per node and peer:\n${bgpNodesText(e.bgp.nodes, e.bgp.peers, wide, c)}`;
  out += findingsText(e.findings, c);
  return out;
}

/** One peer's line: what it gets, or why nothing. */
function peerText(p: PeerView): string {
  if (p.prefixes.length > 0) {
    const got = p.prefixes.map((x) => {
      const attrs = [...(x.localPref ? [`localPref ${x.localPref}`] : []), ...(x.communities.length ? [`communities ${x.communities.join(' ')}`] : [])];
      return attrs.length ? `${x.prefix} (${attrs.join('; ')})` : x.prefix;
    }).join(', ');
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
export function bgpNodesText(nodes: readonly BGPNodeView[], allPeers: readonly string[], wide: boolean, c: ChalkInstance = palette()): string {
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
      const label = peers.length === 1
        ? `${peers[0]!.peer}${peers[0]!.address ? ` (${peers[0]!.address})` : ''}`
        : cut(peers.map((p) => p.peer));
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
  return [...byWhy].map(([why, nodes]) => `${wide ? nodes.join(', ') : list(nodes, 8)}: ${why}`).join('; ');
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
  const bgp = e.bgpAnnouncers.length > 0
    ? `${e.bgpAnnouncers.join(', ')} advertise${e.bgpAnnouncers.length === 1 ? 's' : ''} ${ips} to their BGP peers`
    : `no node advertises ${ips || 'the Service'} to a BGP peer`;
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
  return text.split('\n').map((l) => (l ? `  ${l}` : l)).join('\n');
}

/** `whois` for people: the address and pool, one row per Service holding it, then the BGP view of its prefix. */
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
  for (const h of w.holders) {
    if (!h.bgp) continue;
    out += `\nBGP for ${w.ip} (${h.service}), per node and peer:\n${bgpNodesText(h.bgp.nodes, h.bgp.peers, wide, c)}`;
  }
  return out;
}
