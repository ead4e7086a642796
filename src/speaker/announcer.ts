/**
 * The speaker's Layer 2 data plane, behind an interface (ARP/NDP responders). The speaker loop
 * decides; the announcer only carries a decision out. LoggingL2Announcer only logs what it would
 * do; createL2Announcer picks the real one. (BGP goes through frr-k8s: src/speaker/frrk8s.ts.)
 */
import type { InterfaceSet } from '../core/election/types.ts';
import type { L2Announcer } from './l2-announcer.ts';
import type { Logger } from '../runtime/log.ts';
import type { Layer2Metrics } from './metrics.ts';

export type { L2Announcer } from './l2-announcer.ts';

/** The default L2 data plane until issue #4: logs at debug level what it would answer for. */
export class LoggingL2Announcer implements L2Announcer {
  private readonly log: Logger;
  constructor(log: Logger) {
    this.log = log.with({ protocol: 'layer2' });
  }
  announce(service: string, ips: readonly string[], interfaces: InterfaceSet): void {
    this.log.debug({ op: 'announce', service, ips, interfaces, msg: 'no ARP/NDP data plane yet: nothing answers on the wire' });
  }
  withdraw(service: string): void {
    this.log.debug({ op: 'withdraw', service, msg: 'no ARP/NDP data plane yet: nothing to stop' });
  }
}

/** Which L2 data plane the speaker uses: `raw` answers ARP/NDP on the wire (MetalLB), `log` only logs. */
export type L2DataPlane = 'raw' | 'log';

/** Where MetalLB mounts the metallb-excludel2 ConfigMap; a missing file means no exclusion (as MetalLB). */
export const EXCLUDE_L2_PATH = '/etc/metallb/excludel2.yaml';

/**
 * The speaker's L2Announcer for `dataPlane`. `raw`: a started RawL2Announcer (src/speaker/l2.ts)
 * with the exclusion list read from `excludeL2Path`. Throws UserError (exit 2, one line) without
 * CAP_NET_RAW, when the addon is not built, or when excludel2.yaml is invalid (MetalLB exits then too).
 * `metrics` (SpeakerMetrics.layer2) receives MetalLB's `metallb_layer2_*` counts.
 */
export async function createL2Announcer(dataPlane: L2DataPlane, log: Logger, excludeL2Path = EXCLUDE_L2_PATH, metrics?: Layer2Metrics): Promise<L2Announcer> {
  if (dataPlane === 'log') return new LoggingL2Announcer(log);
  const { UserError } = await import('../core/errors.ts');
  const { rawSocketProblem } = await import('./l2-native.ts');
  const problem = rawSocketProblem();
  if (problem) throw new UserError(`speaker: ${problem}`);
  const { readFileSync } = await import('node:fs');
  const { parseExcludeL2, excludeRegExp } = await import('../core/arp/index.ts');
  let exclude: string[] = [];
  try {
    exclude = parseExcludeL2(readFileSync(excludeL2Path, 'utf8'));
    excludeRegExp(exclude);
  } catch (e) {
    if ((e as { code?: string }).code !== 'ENOENT') throw new UserError(`speaker: ${excludeL2Path}: ${(e as Error).message}`);
  }
  const { RawL2Announcer } = await import('./l2.ts');
  return new RawL2Announcer({ log, exclude, ...(metrics ? { metrics } : {}) }).start();
}
