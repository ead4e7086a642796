/**
 * The L2 data plane's functional core: ARP (RFC 826) and NDP (RFC 4861) codecs, the responders'
 * decisions, the gratuitous ARP / unsolicited NA schedule and interface selection, as MetalLB
 * v0.16.1 internal/layer2. No sockets, no timers: src/speaker/l2 moves the bytes.
 */
export * as arp from './arp.ts';
export * as ndp from './ndp.ts';
export * from './addr.ts';
export * from './result.ts';
export * from './responder.ts';
export * from './schedule.ts';
export * from './interfaces.ts';
export type { ARPFrame, ARPOperation } from './arp.ts';
export type { NDPMessage, NeighborAdvertisement, NeighborSolicitation } from './ndp.ts';
