/**
 * The memberlist member's drops as Prometheus counters (metallb-ts's addition: MetalLB exports
 * nothing about memberlist traffic, and memberlist only logs some of it): an operator sees an
 * attack, a flood or a wrong key.
 *
 * `metallb_speaker_memberlist_dropped_total{reason}`: packets and streams dropped, by the reason
 * the member counts (src/speaker/membership-memberlist.ts, DROP_REASON_HINTS): `decrypt` (wrong or
 * missing key), `label`, `malformed`, `truncated`, `crc`, `unknownType`, `oversized`,
 * `amplification`, `rateLimited`, `streamLimit`, `streamBudget`, `pushPullLimit`, `timeout`,
 * `handoffQueueFull`, … A reason appears once it has been counted.
 */
import { Counter, Gauge, type Registry } from '../runtime/metrics-client.ts';
import type { MemberlistStats } from './membership-memberlist.ts';

/**
 * Registers the memberlist metrics on `registry`, read from `member` at each scrape: the drop
 * counters and `metallb_speaker_memberlist_handler_cpu_max_seconds`, the most CPU one packet or
 * stream handler took since the previous scrape (how long decoding held the event loop; the
 * event loop's own lag, scheduler waits included, is prom-client's nodejs_eventloop_lag_max_seconds).
 */
export function registerMemberlistMetrics(registry: Registry, member: { stats(): MemberlistStats; takeHandlerCpuMax(): number }): void {
  const stats = (): MemberlistStats => member.stats();
  new Gauge({
    name: 'metallb_speaker_memberlist_handler_cpu_max_seconds',
    help: 'The most CPU time one memberlist packet or stream handler took since the previous scrape.',
    registers: [registry],
    collect() {
      this.set(member.takeHandlerCpuMax() / 1000);
    },
  });
  const exported = new Map<string, number>();
  new Counter({
    name: 'metallb_speaker_memberlist_dropped_total',
    help: 'Memberlist packets and streams dropped by this speaker, by reason (decrypt: wrong or missing key; rateLimited: a source over its decoding allowance; amplification, malformed, oversized, ...).',
    labelNames: ['reason'] as const,
    registers: [registry],
    collect() {
      for (const [reason, count] of Object.entries(stats().dropped)) {
        const delta = count - (exported.get(reason) ?? 0);
        if (delta > 0) this.inc({ reason }, delta);
        exported.set(reason, count);
      }
    },
  });
}
