/**
 * The `allocate --dry-run` tables for people: the services (SERVICE EXTERNAL-IP POOL CHANGE
 * MESSAGE, wide: CURRENT-IP EVENTS NOTE), then the pools, after a line per Service defaulted as the
 * API server would.
 */
import type { AllocateReport, AllocateServiceReport, AllocationChange } from '../core/explain/allocate.ts';
import { palette } from './color.ts';
import { PENDING, renderTable } from './table.ts';

/** `[a] → [b, c] → [a] …`: the address lists MetalLB's controller alternates between. */
function cycleText(states: readonly (readonly string[])[]): string {
  return `${states.map((s) => `[${s.join(', ')}]`).join(' → ')} → [${states[0]!.join(', ')}] …`;
}

/**
 * The MESSAGE column: MetalLB's error (or, for a manifest the API server would refuse, `refused`
 * instead), or that the controller never settles on the Service (`oscillates`); empty otherwise.
 */
function messageOf(s: AllocateServiceReport, refused?: string): string | undefined {
  const parts: string[] = [];
  if (refused) parts.push(`the API server would refuse this Service: ${refused}`);
  else if (s.error) parts.push(s.error);
  if (s.oscillates) parts.push(`never settles: MetalLB writes ${cycleText(s.oscillates)} forever`);
  return parts.length ? parts.join('; ') : undefined;
}

/** Events as `kubectl describe` counts them: `IPAllocated`, `AllocationFailed (x3)`. */
function eventsText(s: AllocateServiceReport): string {
  return s.events.map((e) => (e.count > 1 ? `${e.reason} (x${e.count})` : e.reason)).join(',');
}

/**
 * Two tables for people: services (SERVICE EXTERNAL-IP POOL CHANGE MESSAGE), then pools; a last
 * line when the passes stopped at their limit.
 */
export function allocateTable(report: AllocateReport, wide: boolean, color = palette()): string {
  const change = (c: AllocationChange) => (c === 'pending' || c === 'cleared' ? color.red(c) : c === 'changed' ? color.yellow(c) : c === 'allocated' ? color.green(c) : c);
  const svcColumns = ['service', { header: 'external-ip', placeholder: PENDING }, 'pool', 'change', 'message', ...(wide ? ['current-ip', 'events', 'note'] : [])];
  const svcRows = report.services.map((s) => [
    s.service,
    s.ips.join(','),
    s.pool,
    change(s.change),
    messageOf(s, report.defaulted.find((d) => d.service === s.service)?.refused),
    ...(wide ? [s.currentIPs.join(','), eventsText(s), s.nondeterministic] : []),
  ]);
  const services = renderTable(svcColumns, svcRows, 'No LoadBalancer services found.');
  const pools = renderTable(
    ['pool', 'size', 'in-use', 'available-ipv4', 'available-ipv6'],
    report.pools.map((p) => [p.name, String(p.size), p.inUse, String(p.availableIPv4), String(p.availableIPv6)]),
    'No IPAddressPools.',
  );
  const limit = report.passLimitReached
    ? `\n${color.yellow('Stopped')} after ${report.passes} pass${report.passes === 1 ? '' : 'es'} while a Service still asked MetalLB to reprocess every Service: MetalLB's controller keeps going (with a growing backoff), so the addresses above are where the dry run stopped, not where MetalLB ends\n`
    : '';
  const defaults = report.defaulted
    .map((d) =>
      d.refused
        ? `${color.yellow('Not defaulted')}: ${d.service} has no cluster IPs and the API server would refuse it: ${d.refused}\n`
        : `${color.bold('Defaulted')} as the API server would: ${d.service} has no cluster IPs (a manifest not created yet): ipFamilyPolicy ${d.ipFamilyPolicy}, ipFamilies [${d.ipFamilies.join(', ')}], judged from ${d.basis}\n`,
    )
    .join('');
  return `${defaults}${defaults ? '\n' : ''}${services}\n${pools}${limit}`;
}
