/**
 * MetalLB's speakerlist on top of a memberlist member (internal/speakerlist, v0.16.1): the
 * speaker pod IPs come from the API (speaker pods by `--ml-labels` in `--ml-namespace`), read at
 * start and refreshed every 5 minutes; at start, every minute and on `rejoin()` (Kubernetes node
 * changes) the member joins every listed IP that is not the address of a current member, on its
 * own bind port. Join failures are logged, never fatal (MetalLB logs them too).
 *
 * `metallb-ts speaker` builds it when `--ml-bindaddr` and `--ml-labels` are set, with
 * `speakerPodIPs` as the IP source (the speaker's RBAC allows `list pods` in its namespace) and
 * `rejoin()` on Node changes.
 */
import type { Membership, MembershipListener } from '../core/membership/types.ts';
import type { MemberlistMember } from './membership-memberlist.ts';

/** Options: the member, the pod-IP source, timers (ms; MetalLB: 60 s join, 5 min refresh). */
export interface SpeakerListOptions {
  readonly member: MemberlistMember;
  /** Speaker pod IPs (MetalLB: pods matching --ml-labels in --ml-namespace, status.podIP). */
  readonly speakerIPs: () => Promise<string[]>;
  readonly joinIntervalMs?: number;
  readonly refreshIntervalMs?: number;
  readonly log?: (message: string) => void;
}

/** The speaker's `Membership` with memberlist on: who is alive according to the gossip. */
export class SpeakerListMembership implements Membership {
  private readonly o: SpeakerListOptions;
  private ips: string[] = [];
  private timers: NodeJS.Timeout[] = [];
  private joining: Promise<void> | null = null;

  constructor(o: SpeakerListOptions) {
    this.o = o;
  }

  /** Binds the member, reads the speaker IPs and joins them (a failed join only logs). */
  async start(): Promise<void> {
    await this.o.member.start();
    await this.refresh();
    await this.rejoin();
    const join = setInterval(() => void this.rejoin(), this.o.joinIntervalMs ?? 60_000);
    const refresh = setInterval(() => void this.refresh(), this.o.refreshIntervalMs ?? 300_000);
    join.unref();
    refresh.unref();
    this.timers.push(join, refresh);
  }

  private async refresh(): Promise<void> {
    try {
      this.ips = [...new Set(await this.o.speakerIPs())].sort();
    } catch (e) {
      this.o.log?.(`cannot list the speaker pods: ${(e as Error).message}`);
    }
  }

  /** Joins every known speaker IP that is not the address of a current member (one at a time). */
  rejoin(): Promise<void> {
    this.joining ??= (async () => {
      try {
        const known = new Set(
          this.o.member
            .members()
            .filter((m) => m.state === 'alive' || m.state === 'suspect')
            .map((m) => m.addr),
        );
        const targets = this.ips.filter((ip) => !known.has(ip)).map((host) => ({ host, port: this.o.member.port }));
        if (targets.length === 0) return;
        const n = await this.o.member.join(targets);
        this.o.log?.(`joined ${n} of ${targets.length} speakers`);
      } catch (e) {
        this.o.log?.((e as Error).message);
      } finally {
        this.joining = null;
      }
    })();
    return this.joining;
  }

  /** Leaves the cluster (1 s) and closes. */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.o.member.stop();
  }

  alive(): string[] {
    return this.o.member.alive();
  }

  onChange(cb: MembershipListener): void {
    this.o.member.onChange(cb);
  }
}

/** A GET on the API (`kubeGet` bound to a kubeconfig): path and query parameters. */
export type ApiGet = (path: string, query: Record<string, string>) => Promise<unknown>;

/**
 * The IPs of the speaker pods (MetalLB's `PodIPs`): pods matching the label selector `labels` in
 * `namespace`, those in phase Running with a `status.podIP`, without `selfIP` (this speaker's own
 * bind address), unique and sorted.
 */
export async function speakerPodIPs(get: ApiGet, namespace: string, labels: string, selfIP?: string): Promise<string[]> {
  const list = (await get(`/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`, { labelSelector: labels })) as { items?: Array<{ status?: { phase?: string; podIP?: string } }> } | undefined;
  const ips = new Set<string>();
  for (const pod of list?.items ?? []) {
    const ip = pod?.status?.podIP;
    if (pod?.status?.phase === 'Running' && ip && ip !== selfIP) ips.add(ip);
  }
  return [...ips].sort();
}
