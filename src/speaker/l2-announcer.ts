/**
 * What the speaker asks of its Layer 2 data plane, in a module of its own: the announcers
 * (src/speaker/l2.ts, LoggingL2Announcer) implement it and src/speaker/announcer.ts picks one,
 * without the two importing each other.
 */
import type { InterfaceSet } from '../core/election/types.ts';

/**
 * Answers for a service's IPs on the wire (MetalLB `internal/layer2` Announce). Calls are
 * idempotent: `announce` again with other IPs or interfaces replaces the previous announcement.
 */
export interface L2Announcer {
  /**
   * Starts (or updates) answering ARP/NDP for `ips` of `service` (`namespace/name`) on
   * `interfaces` (`all`: every usable interface; a list: those names only). Must not throw.
   */
  announce(service: string, ips: readonly string[], interfaces: InterfaceSet): void;
  /** Stops answering for every IP of `service` at once. No-op when it was not announced. */
  withdraw(service: string): void;
  /**
   * The node's interface names that the exclusion list leaves (MetalLB `Announce.GetInterfaces`:
   * every interface, up or down, not matched by metallb-excludel2), or absent when this data plane
   * does not know them (then an L2Advertisement's `interfaces` are not checked against the node).
   */
  nodeInterfaces?(): readonly string[];
}
