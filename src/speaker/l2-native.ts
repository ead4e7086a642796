/**
 * Loads the raw-socket addon (native/l2.c, built to native/build/l2.node by `npm ci`) and types it.
 * The addon only moves bytes; src/core/arp decides. Its functions throw an Error whose `code` is
 * the errno name (`EPERM` without CAP_NET_RAW, `EADDRNOTAVAIL` for a tentative link-local, ...).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { PACKAGE_ROOT } from '../runtime/package-root.ts';

/** An opaque receive handle (libuv poll on the socket). */
export type WatchHandle = { readonly __brand: 'WatchHandle' };

/** The addon's functions. fd numbers are plain ints; frames are Buffers. */
export interface L2Native {
  /** AF_PACKET/SOCK_RAW socket for ETH_P_ARP bound to `ifindex` (no promiscuous mode). */
  openArp(ifindex: number): number;
  /** ICMPv6 raw socket bound to `linkLocal` (16 bytes) on `ifindex`, hop limits 255, NS-only filter, IPV6_RECVHOPLIMIT. */
  openNdp(ifindex: number, linkLocal: Uint8Array): number;
  /**
   * AF_NETLINK/NETLINK_ROUTE socket subscribed to RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR
   * (link and address changes of this network namespace); watch it with kind 2.
   */
  openNetlink(): number;
  /** Joins (`join` true) or leaves a multicast group (16 bytes) on `ifindex`. */
  group(fd: number, ifindex: number, group: Uint8Array, join: boolean): void;
  /** Sends an Ethernet frame (destination MAC = its first 6 bytes). */
  sendArp(fd: number, ifindex: number, frame: Uint8Array): void;
  /** Sends an ICMPv6 message to `destination` (16 bytes) on `ifindex`; the kernel adds the checksum. */
  sendNdp(fd: number, ifindex: number, destination: Uint8Array, icmp: Uint8Array): void;
  /**
   * Calls `onFrame` per received datagram (ARP: frame and source MAC; NDP: ICMPv6 message, source
   * IPv6 (16 bytes) and the hop limit it arrived with; `hopLimit` is -1 when unknown, always for ARP;
   * netlink (kind 2): the raw netlink message, an empty source, -1; an empty message means the
   * receive buffer overflowed and changes were lost).
   */
  watch(fd: number, kind: 0 | 1 | 2, onFrame: (frame: Buffer, source: Buffer, hopLimit: number) => void): WatchHandle;
  /** Stops receiving and closes the socket (call once). */
  stop(handle: WatchHandle): void;
  /** The handle no longer keeps the event loop alive. */
  unref(handle: WatchHandle): void;
  /** Closes a socket that was never watched. */
  closeFd(fd: number): void;
}

/**
 * Path of the built addon, from the package root (right from src/ and from the bundle, dist/cli.cjs).
 * `METALLB_TS_L2_ADDON` replaces it (for tests: a missing or broken addon without touching
 * native/build/l2.node).
 */
export const ADDON_PATH = process.env.METALLB_TS_L2_ADDON || `${PACKAGE_ROOT}/native/build/l2.node`;

/** Where native/build.sh writes why it could not build the addon (one line). */
export const ADDON_UNAVAILABLE_PATH = `${ADDON_PATH}.unavailable`;

let cached: L2Native | undefined;

/** The addon; throws Error (`code` MODULE_NOT_FOUND or a dlopen error) when it was not built. */
export function loadL2Native(): L2Native {
  cached ??= createRequire(import.meta.url)(ADDON_PATH) as L2Native;
  return cached;
}

/** How to get the addon, for the messages below. */
const BUILD_HINT = 'build it with sh native/build.sh (needs Linux, a C compiler and Node-API headers; npm ci runs it), or run the speaker with --l2-data-plane log';

/**
 * One line saying why the addon cannot be used, for an error `loadL2Native` threw: not Linux, not
 * built (with native/build.sh's reason when it left one), or present but not loadable.
 */
export function addonProblem(err: unknown, platform: string = process.platform): string {
  if (platform !== 'linux') return `the L2 raw data plane needs Linux (AF_PACKET raw sockets), this is ${platform}: run the speaker with --l2-data-plane log`;
  if (!existsSync(ADDON_PATH)) {
    let why = '';
    try {
      why = readFileSync(ADDON_UNAVAILABLE_PATH, 'utf8').split('\n')[0]!.trim();
    } catch {
      // no reason recorded: npm ci (native/build.sh) never ran here
    }
    return `the L2 raw-socket addon ${ADDON_PATH} is not built${why ? ` (${why})` : ''}: ${BUILD_HINT}`;
  }
  const first = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.trim();
  return `the L2 raw-socket addon ${ADDON_PATH} does not load (${first}): re${BUILD_HINT}`;
}

/**
 * Whether this process may open raw sockets: null when it may, else one line saying why not
 * (no CAP_NET_RAW, or the addon is missing). Opens and closes one AF_PACKET socket on loopback.
 */
export function rawSocketProblem(): string | null {
  let n: L2Native;
  try {
    n = loadL2Native();
  } catch (e) {
    return addonProblem(e);
  }
  try {
    n.closeFd(n.openArp(1));
    return null;
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'EPERM' || code === 'EACCES') return 'the L2 data plane needs CAP_NET_RAW (run as root or add the NET_RAW capability) to open ARP/NDP raw sockets';
    return `cannot open a raw socket: ${(e as Error).message}`;
  }
}
