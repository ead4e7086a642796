/**
 * Text output of `metallb-ts speaker --dry-run`: the verdict first (is the configuration accepted,
 * what happens to the node's FRRConfiguration), then the writes in order, the per-Service
 * decisions and the Events. `-o yaml|json` prints the SpeakerDryRun document itself.
 */
import type { SpeakerDryRun } from '../speaker/dry-run.ts';
import type { FRRConfiguration } from '../core/frrk8s/types.ts';
import { LABEL_SERVICE_NAME, LABEL_SERVICE_NAMESPACE } from '../core/status.ts';
import { renderTable } from './table.ts';
import { escapeControl } from '../core/text.ts';

function frrSummary(f: FRRConfiguration): string[] {
  const out: string[] = [];
  for (const r of f.spec.bgp.routers ?? []) {
    out.push(`  router ASN ${r.asn}${r.id ? ` id ${r.id}` : ''}${r.vrf ? ` vrf ${r.vrf}` : ''}: ${(r.prefixes ?? []).length} prefix(es)`);
    for (const n of r.neighbors ?? []) {
      const who = n.address ?? `interface ${n.interface}`;
      const asn = n.asn !== undefined ? `ASN ${n.asn}` : `${n.dynamicASN} ASN`;
      const prefixes = n.toAdvertise.allowed.prefixes ?? [];
      const extras = [
        ...(n.toAdvertise.withCommunity ?? []).map((c) => `community ${c.community} on ${c.prefixes.length}`),
        ...(n.toAdvertise.withLocalPref ?? []).map((l) => `localPref ${l.localPref} on ${l.prefixes.length}`),
      ];
      out.push(`    neighbor ${who} (${asn}): ${prefixes.length ? prefixes.join(', ') : 'no prefixes'}${extras.length ? `; ${extras.join('; ')}` : ''}`);
    }
  }
  const bfd = f.spec.bgp.bfdProfiles ?? [];
  if (bfd.length > 0) out.push(`  BFD profiles: ${bfd.map((b) => b.name).join(', ')}`);
  return out;
}

/** The text rendering of a dry run (ends with a newline). */
export function renderSpeakerDryRun(r: SpeakerDryRun): string {
  const lines: string[] = [];
  const frrWrites = r.writes.filter((w) => w.kind === 'FRRConfiguration');
  const frrName = `${r.frrk8sNamespace}/metallb-${r.node}`;
  lines.push(`Speaker on node ${escapeControl(r.node)} (dry run: nothing was written)`);
  if (r.configuration.accepted) {
    lines.push('Configuration: accepted');
  } else {
    lines.push(`Configuration: REJECTED by this speaker (${r.configuration.stage}): ${escapeControl(r.configuration.error)}`);
    lines.push('  It keeps acting on the last configuration it accepted (none when it starts with this one: then it announces nothing).');
  }
  const dropped = [...r.configuration.droppedPeers.map((p) => `BGPPeer ${p}`), ...r.configuration.droppedBGPAdvertisements.map((a) => `BGPAdvertisement ${a}`)];
  if (dropped.length > 0) lines.push(`  Not for this node (nodeSelectors): ${dropped.join(', ')}`);
  const frrVerb = frrWrites.length === 0 ? (r.frrConfiguration ? 'unchanged' : 'none written') : frrWrites.map((w) => w.verb).join(', then ');
  lines.push(`FRRConfiguration ${frrName}: ${frrVerb}`);
  if (r.frrConfiguration) lines.push(...frrSummary(r.frrConfiguration));
  lines.push('');
  lines.push(`Writes (${r.writes.length}):`);
  if (r.writes.length === 0) lines.push('  none: the cluster already holds what this speaker would write');
  for (const w of r.writes) {
    const about = (w.body as { metadata?: { labels?: Record<string, string> } } | undefined)?.metadata?.labels ?? {};
    const svc = about[LABEL_SERVICE_NAME] ? ` (${about[LABEL_SERVICE_NAMESPACE]}/${about[LABEL_SERVICE_NAME]})` : '';
    lines.push(`  ${w.verb} ${w.kind} ${w.namespace}/${w.name}${svc}`);
  }
  lines.push('');
  const rows = r.services.map((s) => [s.service, s.bgp, s.layer2, s.peers.join(',')]);
  lines.push(renderTable([{ header: 'service' }, { header: 'bgp' }, { header: 'layer2' }, { header: 'bgp peers' }], rows, 'No Services.').trimEnd());
  if (r.events.length > 0) {
    lines.push('');
    lines.push('Events:');
    for (const e of r.events) lines.push(`  ${e.service}: ${e.type} ${e.reason} ${escapeControl(e.message)}`);
  }
  return `${lines.join('\n')}\n`;
}
