/**
 * The real Layer 2 data plane (MetalLB internal/layer2 Announce): ARP and NDP responders on every
 * usable interface, answering for the IPs the speaker announces, and gratuitous ARPs / unsolicited
 * NAs after a takeover. The shell around src/core/arp: it reads interfaces from /sys and /proc,
 * owns sockets (native addon) and timers, and counts what it drops. Never adds an IP to an interface.
 */
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import type { InterfaceSet } from '../core/election/types.ts';
import {
  addAnnounced,
  arp,
  countDrop,
  excludeRegExp,
  gratuitousARP,
  GRATUITOUS_INTERVAL_MS,
  ipBytes,
  ipFamily,
  ndp,
  removeAnnounced,
  respondARP,
  respondNDP,
  selectInterfaces,
  solicitedNodeMulticast,
  takeOverInPlace,
  tick,
  unsolicitedNA,
  ipv6At,
} from '../core/arp/index.ts';
import type { DropCounts, InterfaceChoice, LinkInfo } from '../core/arp/index.ts';
import { canonicalIP } from '../core/ip.ts';
import type { L2Announcer } from './l2-announcer.ts';
import { loadL2Native } from './l2-native.ts';
import type { L2Native, WatchHandle } from './l2-native.ts';
import type { Logger } from '../runtime/log.ts';
import type { Layer2Metrics } from './metrics.ts';

const IFF_UP = 0x1;
const IFF_BROADCAST = 0x2;
const IFF_NOARP = 0x80;
const IFA_F_DADFAILED = 0x08;
const IFA_F_TENTATIVE = 0x40;

/** Reads every interface of this network namespace from /sys/class/net and /proc/net/if_inet6. */
export function readLinks(sys = '/sys/class/net', ifInet6 = '/proc/net/if_inet6'): LinkInfo[] {
  const linkLocal = new Map<number, string>();
  let v6 = '';
  try {
    v6 = readFileSync(ifInet6, 'utf8');
  } catch {
    /* IPv6 disabled */
  }
  for (const line of v6.split('\n')) {
    const [hex, idx, , scope, flags] = line.trim().split(/\s+/);
    if (hex?.length !== 32 || scope !== '20') continue;
    if (parseInt(flags ?? '0', 16) & (IFA_F_TENTATIVE | IFA_F_DADFAILED)) continue;
    const index = parseInt(idx ?? '', 16);
    if (!linkLocal.has(index)) linkLocal.set(index, ipv6At(Buffer.from(hex, 'hex'), 0));
  }
  const out: LinkInfo[] = [];
  for (const name of readdirSync(sys).sort()) {
    const read = (f: string) => {
      try {
        return readFileSync(`${sys}/${name}/${f}`, 'utf8').trim();
      } catch {
        return '';
      }
    };
    const index = parseInt(read('ifindex'), 10);
    if (!Number.isFinite(index)) continue;
    const flags = parseInt(read('flags') || '0', 16);
    const mac = read('address');
    out.push({
      name,
      index,
      up: (flags & IFF_UP) !== 0,
      broadcast: (flags & IFF_BROADCAST) !== 0,
      noarp: (flags & IFF_NOARP) !== 0,
      master: existsSync(`${sys}/${name}/master`) ? 'master' : null,
      hardwareAddress: /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(mac) && mac !== '00:00:00:00:00:00' ? mac : null,
      linkLocal: linkLocal.get(index) ?? null,
    });
  }
  return out;
}

/** One thing the data plane did (for tests, the bench and debug logs). */
export type L2Event =
  | { kind: 'reply'; protocol: 'arp' | 'ndp'; interface: string; ip: string; to: string; handlingNs: number; hopLimit?: number }
  | { kind: 'gratuitous'; protocol: 'arp' | 'ndp'; interface: string; ip: string }
  | { kind: 'responder'; protocol: 'arp' | 'ndp'; interface: string; op: 'created' | 'deleted' | 'failed'; error?: string };

/** Options of {@link RawL2Announcer}. */
export interface RawL2AnnouncerOptions {
  readonly log: Logger;
  /** Exclusion regexps (metallb-excludel2); default none. */
  readonly exclude?: readonly string[];
  /** Interface rescan period in ms (MetalLB: 10 s). */
  readonly scanIntervalMs?: number;
  /** Delay from a netlink link/address change to the rescan it triggers (changes within it coalesce); default 100 ms. */
  readonly rescanDebounceMs?: number;
  /** Interfaces source; default {@link readLinks}. */
  readonly links?: () => LinkInfo[];
  readonly native?: L2Native;
  readonly onEvent?: (e: L2Event) => void;
  /** MetalLB's `metallb_layer2_*` counters (src/speaker/metrics.ts layer2Metrics). */
  readonly metrics?: Layer2Metrics;
}

interface Responder {
  readonly protocol: 'arp' | 'ndp';
  readonly name: string;
  readonly index: number;
  readonly mac: string;
  /** NDP: the link-local address the socket is bound to */
  readonly linkLocal: string | null;
  readonly fd: number;
  readonly handle: WatchHandle;
  /** NDP: solicited-node groups joined, with reference counts */
  readonly groups: Map<string, number>;
}

/**
 * MetalLB's Announce with real sockets. `start()` scans interfaces and opens responders (and
 * rescans every `scanIntervalMs` and, debounced, on every netlink link/address change); `announce`/`withdraw` implement {@link L2Announcer};
 * `close()` stops everything. Drops are counted in `drops` by reason.
 */
export class RawL2Announcer implements L2Announcer {
  readonly drops: DropCounts = {};
  readonly sent = { replies: 0, gratuitous: 0 };
  private readonly log: Logger;
  private readonly native: L2Native;
  private readonly exclude: RegExp | null;
  private readonly services = new Map<string, { ips: string[]; interfaces: InterfaceSet }>();
  /**
   * IP → interface sets of the services announcing it (core AnnouncedIPs), and IP → end of its
   * gratuitous window (core GratuitousState): both updated in place per announcement (a copy per
   * announcement made a burst of N announcements allocate O(N²): about 50 MiB of old-generation
   * garbage, resident, for 1,000 Services).
   */
  private readonly announced = new Map<string, InterfaceSet[]>();
  private readonly responders = new Map<string, Responder>(); // `${protocol}/${index}`
  private gratuitous = new Map<string, number>();
  private gratuitousTimer: NodeJS.Timeout | undefined;
  private scanTimer: NodeJS.Timeout | undefined;
  private netlink: WatchHandle | undefined;
  private rescanTimer: NodeJS.Timeout | undefined;
  private choices: InterfaceChoice[] = [];

  private readonly opts: RawL2AnnouncerOptions;

  constructor(opts: RawL2AnnouncerOptions) {
    this.opts = opts;
    this.log = opts.log.with({ protocol: 'layer2' });
    this.native = opts.native ?? loadL2Native();
    this.exclude = excludeRegExp(opts.exclude ?? []);
  }

  /**
   * First interface scan (responders open now), the periodic rescan, and a rescan on change: a
   * netlink socket (link and IPv4/IPv6 address events) triggers a debounced scan. Without the
   * netlink socket (error logged) the periodic rescan alone remains.
   */
  start(): this {
    this.scan();
    this.scanTimer = setInterval(() => this.scan(), this.opts.scanIntervalMs ?? 10_000);
    this.scanTimer.unref();
    let fd = -1;
    try {
      fd = this.native.openNetlink();
      this.netlink = this.native.watch(fd, 2, () => this.changed());
      this.native.unref(this.netlink);
    } catch (e) {
      if (fd >= 0 && !this.netlink) this.native.closeFd(fd);
      this.log.error({ op: 'watchInterfaces', error: (e as Error).message, msg: 'cannot watch interface changes (netlink); rescanning every scan interval only' });
    }
    return this;
  }

  /** A netlink link/address change: rescan once the burst settles. */
  private changed(): void {
    if (this.rescanTimer) return;
    this.rescanTimer = setTimeout(() => {
      this.rescanTimer = undefined;
      this.scan();
    }, this.opts.rescanDebounceMs ?? 100);
    this.rescanTimer.unref();
  }

  /** The latest interface selection (which interfaces answer ARP/NDP and why others do not). */
  interfaces(): readonly InterfaceChoice[] {
    return this.choices;
  }

  /** The interface names the exclusion list leaves (see L2Announcer.nodeInterfaces). */
  nodeInterfaces(): readonly string[] {
    return this.choices.filter((c) => c.skipped !== 'excluded').map((c) => c.name);
  }

  /** Rescans interfaces: opens responders on new usable ones, closes those gone or unusable. */
  scan(): void {
    let links: LinkInfo[];
    try {
      links = (this.opts.links ?? readLinks)();
    } catch (e) {
      this.log.error({ op: 'getInterfaces', error: (e as Error).message, msg: "couldn't list interfaces" });
      return;
    }
    this.choices = selectInterfaces(links, this.exclude);
    const keep = new Set<string>();
    for (const c of this.choices) {
      const link = links.find((l) => l.index === c.index)!;
      if (c.arp) {
        keep.add(`arp/${c.index}`);
        this.ensure('arp', link);
      }
      if (c.ndp) {
        keep.add(`ndp/${c.index}`);
        this.ensure('ndp', link);
      }
    }
    for (const [key, r] of this.responders) {
      if (keep.has(key)) continue;
      this.native.stop(r.handle);
      this.responders.delete(key);
      this.log.info({ interface: r.name, event: r.protocol === 'arp' ? 'deleteARPResponder' : 'deleteNDPResponder', msg: `deleted ${r.protocol.toUpperCase()} responder for interface` });
      this.opts.onEvent?.({ kind: 'responder', protocol: r.protocol, interface: r.name, op: 'deleted' });
    }
  }

  private ensure(protocol: 'arp' | 'ndp', link: LinkInfo): void {
    const key = `${protocol}/${link.index}`;
    const have = this.responders.get(key);
    if (have && have.mac === link.hardwareAddress && have.name === link.name && (protocol === 'arp' || have.linkLocal === link.linkLocal)) return;
    if (have) {
      this.native.stop(have.handle);
      this.responders.delete(key);
    }
    const mac = link.hardwareAddress!;
    let fd = -1;
    try {
      fd = protocol === 'arp' ? this.native.openArp(link.index) : this.native.openNdp(link.index, ipBytes(link.linkLocal!, 'ipv6'));
      const groups = new Map<string, number>();
      const r: Responder = {
        protocol,
        name: link.name,
        index: link.index,
        mac,
        linkLocal: protocol === 'ndp' ? link.linkLocal : null,
        fd,
        groups,
        handle: this.native.watch(fd, protocol === 'arp' ? 0 : 1, (frame, source, hopLimit) => (protocol === 'arp' ? this.onARP(r, frame) : this.onNDP(r, frame, source, hopLimit))),
      };
      this.native.unref(r.handle);
      this.responders.set(key, r);
      if (protocol === 'ndp') for (const ip of this.announced.keys()) if (ipFamily(ip) === 'ipv6') this.watchGroup(r, ip);
      this.log.info({ interface: link.name, event: protocol === 'arp' ? 'createARPResponder' : 'createNDPResponder', msg: `created ${protocol.toUpperCase()} responder for interface` });
      this.opts.onEvent?.({ kind: 'responder', protocol, interface: link.name, op: 'created' });
    } catch (e) {
      if (fd >= 0 && !this.responders.has(key)) this.native.closeFd(fd);
      this.log.error({ interface: link.name, op: protocol === 'arp' ? 'createARPResponder' : 'createNDPResponder', error: (e as Error).message, msg: `failed to create ${protocol.toUpperCase()} responder` });
      this.opts.onEvent?.({ kind: 'responder', protocol, interface: link.name, op: 'failed', error: (e as Error).message });
    }
  }

  private onARP(r: Responder, frame: Buffer): void {
    const t0 = process.hrtime.bigint();
    const res = respondARP(frame, { interface: r.name, hardwareAddress: r.mac, announced: this.announced });
    if ('dropped' in res) {
      countDrop(this.drops, `arp:${res.dropped}`);
      if (res.dropped === 'interface-not-allowed') this.log.debug({ op: 'arpRequestIgnore', ip: res.request?.targetProtocolAddress, interface: r.name, reason: 'notMatchInterface' });
      return;
    }
    const ip = res.reply.senderProtocolAddress;
    this.opts.metrics?.requestsReceived.inc({ ip });
    try {
      this.native.sendArp(r.fd, r.index, res.bytes);
    } catch (e) {
      this.log.error({ op: 'arpReply', interface: r.name, ip: res.reply.senderProtocolAddress, error: (e as Error).message, msg: 'failed to send ARP reply' });
      return;
    }
    this.sent.replies++;
    this.opts.metrics?.responsesSent.inc({ ip });
    const handlingNs = Number(process.hrtime.bigint() - t0);
    this.opts.onEvent?.({ kind: 'reply', protocol: 'arp', interface: r.name, ip: res.reply.senderProtocolAddress, to: res.reply.targetHardwareAddress, handlingNs });
  }

  private onNDP(r: Responder, message: Buffer, source: Buffer, hopLimit: number | undefined): void {
    const t0 = process.hrtime.bigint();
    const src = ipv6At(source, 0);
    const res = respondNDP(message, src, { interface: r.name, hardwareAddress: r.mac, announced: this.announced }, hopLimit);
    if ('dropped' in res) {
      countDrop(this.drops, `ndp:${res.dropped}`);
      return;
    }
    this.opts.metrics?.requestsReceived.inc({ ip: res.targetAddress });
    try {
      this.native.sendNdp(r.fd, r.index, ipBytes(res.destination, 'ipv6'), res.bytes);
    } catch (e) {
      this.log.error({ op: 'ndpReply', interface: r.name, ip: res.targetAddress, error: (e as Error).message, msg: 'failed to send NDP reply' });
      return;
    }
    this.sent.replies++;
    this.opts.metrics?.responsesSent.inc({ ip: res.targetAddress });
    const handlingNs = Number(process.hrtime.bigint() - t0);
    this.opts.onEvent?.({ kind: 'reply', protocol: 'ndp', interface: r.name, ip: res.targetAddress, to: src, handlingNs, ...(hopLimit !== undefined ? { hopLimit } : {}) });
  }

  private watchGroup(r: Responder, ip: string): void {
    const g = solicitedNodeMulticast(ip);
    const n = r.groups.get(g) ?? 0;
    if (n === 0) {
      try {
        this.native.group(r.fd, r.index, ipBytes(g, 'ipv6'), true);
      } catch (e) {
        this.log.error({
          op: 'watchMulticastGroup',
          ip,
          interface: r.name,
          error: (e as Error).message,
          msg: 'failed to watch NDP multicast group for IP, NDP responder will not respond to requests for this address',
        });
        return;
      }
    }
    r.groups.set(g, n + 1);
  }

  private unwatchGroup(r: Responder, ip: string): void {
    const g = solicitedNodeMulticast(ip);
    const n = r.groups.get(g) ?? 0;
    if (n <= 0) return;
    if (n === 1) {
      r.groups.delete(g);
      try {
        this.native.group(r.fd, r.index, ipBytes(g, 'ipv6'), false);
      } catch (e) {
        this.log.error({ op: 'unwatchMulticastGroup', ip, interface: r.name, error: (e as Error).message, msg: 'failed to unwatch NDP multicast group for IP' });
      }
    } else r.groups.set(g, n - 1);
  }

  /** Starts (or updates) answering for `ips` of `service` and sends gratuitous announcements for them. */
  announce(service: string, ips: readonly string[], interfaces: InterfaceSet): void {
    const canon = ips.map((ip) => canonicalIP(ip)).filter((ip): ip is string => !!ip);
    const fresh = canon.filter((ip) => !this.announced.has(ip));
    const old = this.services.get(service);
    if (old) removeAnnounced(this.announced, old.ips, old.interfaces);
    this.services.set(service, { ips: canon, interfaces });
    addAnnounced(this.announced, canon, interfaces);
    for (const ip of fresh) {
      if (ipFamily(ip) === 'ipv6') for (const r of this.responders.values()) if (r.protocol === 'ndp') this.watchGroup(r, ip);
    }
    if (old) this.leaveGone(old.ips);
    for (const ip of canon) {
      if (takeOverInPlace(this.gratuitous, ip, Date.now())) this.sendGratuitous(ip);
    }
    this.armGratuitousTimer();
  }

  /** Stops answering for every IP of `service` at once (gratuitous announcements of IPs nobody else announces stop too). */
  withdraw(service: string): void {
    const old = this.services.get(service);
    if (!old) return;
    this.services.delete(service);
    removeAnnounced(this.announced, old.ips, old.interfaces);
    this.leaveGone(old.ips);
  }

  /** After `ips` (a service's, canonical) were taken out of `announced`: stops what those nobody announces any more had. */
  private leaveGone(ips: readonly string[]): void {
    for (const ip of new Set(ips)) {
      if (this.announced.has(ip)) continue;
      this.gratuitous.delete(ip); // core forget, in place
      if (ipFamily(ip) === 'ipv6') for (const r of this.responders.values()) if (r.protocol === 'ndp') this.unwatchGroup(r, ip);
    }
  }

  private armGratuitousTimer(): void {
    if (this.gratuitous.size === 0 || this.gratuitousTimer) return;
    this.gratuitousTimer = setInterval(() => {
      const t = tick(this.gratuitous, Date.now());
      this.gratuitous = t.state;
      for (const ip of t.send) this.sendGratuitous(ip);
      if (this.gratuitous.size === 0) {
        clearInterval(this.gratuitousTimer);
        this.gratuitousTimer = undefined;
      }
    }, GRATUITOUS_INTERVAL_MS);
    this.gratuitousTimer.unref(); // the speaker's own work keeps the process alive, not a pending announcement
  }

  /** MetalLB gratuitous(): on every responder of the IP's family whose interface the IP allows. */
  private sendGratuitous(ip: string): void {
    const sets = this.announced.get(ip);
    if (!sets) return;
    const protocol = ipFamily(ip) === 'ipv4' ? 'arp' : 'ndp';
    for (const r of this.responders.values()) {
      if (r.protocol !== protocol) continue;
      if (!sets.some((s) => s === 'all' || s?.includes(r.name))) continue;
      try {
        if (protocol === 'arp') {
          for (const f of gratuitousARP(ip, r.mac)) {
            this.native.sendArp(r.fd, r.index, arp.encode(f));
            this.opts.metrics?.gratuitousSent.inc({ ip });
          }
        } else {
          const u = unsolicitedNA(ip, r.mac);
          this.native.sendNdp(r.fd, r.index, ipBytes(u.destination, 'ipv6'), ndp.encode(u.message));
          this.opts.metrics?.gratuitousSent.inc({ ip });
        }
        this.sent.gratuitous++;
        this.opts.onEvent?.({ kind: 'gratuitous', protocol, interface: r.name, ip });
      } catch (e) {
        this.log.error({ op: 'gratuitousAnnounce', error: (e as Error).message, ip, interface: r.name, msg: `failed to make gratuitous ${protocol.toUpperCase()} announcement` });
      }
    }
  }

  /** Stops every responder and timer. */
  close(): void {
    clearInterval(this.scanTimer);
    clearTimeout(this.rescanTimer);
    this.rescanTimer = undefined;
    if (this.netlink) {
      this.native.stop(this.netlink);
      this.netlink = undefined;
    }
    clearInterval(this.gratuitousTimer);
    this.gratuitousTimer = undefined;
    for (const r of this.responders.values()) this.native.stop(r.handle);
    this.responders.clear();
  }
}
