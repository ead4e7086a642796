/**
 * MetalLB's speakerlist on top of a memberlist member (internal/speakerlist, v0.16.1): the
 * speaker pod IPs come from the API (speaker pods by `--ml-labels` in `--ml-namespace`), read at
 * start and refreshed every 5 minutes; at start, every minute and on `rejoin()` (Kubernetes node
 * changes) the member joins every listed IP that is not the address of a current member, on its
 * own bind port. Join failures are logged, never fatal (MetalLB logs them too).
 *
 * Not wired into `metallb-ts speaker` yet: the command needs the pod lister (the speaker's RBAC
 * must then allow `list pods` in its namespace) and the `--ml-*` flags.
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
        const known = new Set(this.o.member.members().filter((m) => m.state === 'alive' || m.state === 'suspect').map((m) => m.addr));
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
