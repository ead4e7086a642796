/**
 * The memberlist member's options, its member table rows and its counters, as the speaker, the
 * debug endpoint and `metallb-ts members` see them.
 */
import type { MemberlistConfig } from '../core/membership/config.ts';
import type { DecodeAllowanceLimits } from '../core/membership/decode-allowance.ts';
import { parseIPBytes } from '../core/ip.ts';
import { ipToString } from '../core/membership/messages.ts';
import type { MemberEntry } from '../core/membership/swim.ts';

/** Options of a memberlist member (MetalLB: name = node name, bind = pod IP, port 7946). */
export interface MemberlistOptions {
  readonly name: string;
  readonly bindAddr: string;
  /** 0 picks a free port (tests). */
  readonly bindPort: number;
  readonly config?: MemberlistConfig;
  /** The encryption key(s), primary first; null/absent = unencrypted. */
  readonly keys?: readonly Uint8Array[] | null;
  readonly label?: string;
  /** Starting incarnation (tests of restarts); memberlist starts at 1. */
  readonly incarnation?: number;
  readonly seed?: number;
  readonly log?: (message: string) => void;
  /** Decoding work each source address may cause (default DEFAULT_DECODE_LIMITS: 1 MiB/s, 2 MiB burst). */
  readonly decodeLimits?: DecodeAllowanceLimits;
}

/** One row of the member table (`metallb-ts members`, the debug endpoint). */
export interface MemberView {
  readonly name: string;
  readonly addr: string;
  readonly port: number;
  readonly state: 'alive' | 'suspect' | 'dead' | 'left';
  readonly incarnation: number;
}

/**
 * Counters of the member (packets/streams in and out, stream decode attempts, drops by reason)
 * and gauges. Drop reasons include the wire errors (`malformed`, `truncated`, `decrypt`,
 * `amplification`, …), `rateLimited`, `handoffQueueFull`, `pushPullLimit`, `streamLimit`,
 * `streamBudget`, `unsupportedType` (an err message in a packet).
 */
export interface MemberlistStats {
  packetsIn: number;
  packetsOut: number;
  streamsIn: number;
  streamsOut: number;
  dropped: Record<string, number>;
  /** Inbound push/pulls holding a slot now (≤ MAX_PUSH_PULL_REQUESTS − 1). */
  pushPullsInFlight: number;
  /** Inbound streams open now (≤ MAX_INBOUND_STREAMS). */
  inboundStreams: number;
  /** Buffer capacity (bytes) inbound streams hold now, not yet decoded (≤ INBOUND_STREAM_BUDGET_BYTES). */
  inboundBufferedBytes: number;
  /** Bytes inbound streams have received and not yet decoded (≤ inboundBufferedBytes). */
  inboundReceivedBytes: number;
  /** Stream message decode attempts (in and out), each over the bytes buffered so far. */
  streamDecodeAttempts: number;
  /**
   * The most CPU time (ms, this thread's, so not the time the scheduler kept the process waiting)
   * one packet or stream-data handler took since `takeHandlerCpuMax()` last read it: the longest
   * the member's decoding held the event loop.
   */
  handlerCpuMaxMs: number;
}

/**
 * Parses an IP literal to its raw bytes (4 for IPv4, 16 for IPv6, IPv4-mapped IPv6 included;
 * src/core/ip.ts parseIPBytes). Throws RangeError for anything else.
 */
export function ipToBytes(ip: string): Uint8Array {
  const b = parseIPBytes(ip);
  if (!b) throw new RangeError(`not an IP address: ${ip}`);
  return b;
}

/** A member table row as `members()` shows it. */
export function view(m: MemberEntry): MemberView {
  return { name: m.name, addr: ipToString(m.addr), port: m.port, state: m.state, incarnation: m.incarnation };
}
