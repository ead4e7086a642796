/**
 * The decoding work each memberlist peer (source IP address) may cause per second: a token bucket
 * of bytes per source. metallb-ts's addition: memberlist trusts its peers, and one peer sending
 * amplification packets (compress layers that unpack far more than they weigh) or garbage as fast
 * as it can would otherwise take the speaker's CPU and stall its event loop.
 *
 * Work is counted in bytes: a datagram's own bytes plus what its compress layers unpacked (failed
 * or not), a stream message's unpacked bytes. A source may spend `burstBytes` at once and earns
 * `bytesPerSecond`; a source whose bucket is empty has its packets and stream messages dropped
 * before they are decoded (counted `rateLimited` by the member). A charge may take the bucket
 * below zero (the work was done): the source then waits until it is paid back.
 *
 * Pure state (time is passed in, ms); no I/O.
 */

/** Decoding work (bytes) one source may cause per second: 1 MiB. A real peer causes under 100 KB/s. */
export const DECODE_BYTES_PER_SECOND = 1024 * 1024;

/** Decoding work (bytes) one source may cause at once: 2 MiB (a join's push/pull of a large cluster fits). */
export const DECODE_BURST_BYTES = 2 * 1024 * 1024;

/**
 * Sources tracked at once: 4096. Beyond, full buckets (sources that have paid back, which carry no
 * information) are forgotten, then the oldest tracked. A peer spoofing many source addresses
 * escapes any per-source bound; the per-packet limits (MAX_PACKET_DECOMPRESSED_BYTES) still hold.
 */
export const MAX_DECODE_SOURCES = 4096;

/** Rate and burst of a DecodeAllowance. */
export interface DecodeAllowanceLimits {
  /** Bytes of decoding work earned per second, per source. */
  readonly bytesPerSecond: number;
  /** Largest balance (bytes) a source may hold. */
  readonly burstBytes: number;
}

/** The default limits (DECODE_BYTES_PER_SECOND, DECODE_BURST_BYTES). */
export const DEFAULT_DECODE_LIMITS: DecodeAllowanceLimits = { bytesPerSecond: DECODE_BYTES_PER_SECOND, burstBytes: DECODE_BURST_BYTES };

interface Bucket {
  tokens: number;
  atMs: number;
}

/** Per-source token buckets of decoding work (bytes). */
export class DecodeAllowance {
  private readonly buckets = new Map<string, Bucket>();
  readonly limits: DecodeAllowanceLimits;
  private readonly maxSources: number;

  constructor(limits: DecodeAllowanceLimits = DEFAULT_DECODE_LIMITS, maxSources = MAX_DECODE_SOURCES) {
    this.limits = limits;
    this.maxSources = maxSources;
  }

  private refill(b: Bucket, nowMs: number): void {
    const elapsed = Math.max(0, nowMs - b.atMs);
    b.tokens = Math.min(this.limits.burstBytes, b.tokens + (elapsed / 1000) * this.limits.bytesPerSecond);
    b.atMs = nowMs;
  }

  /** The bytes `source` may still spend now (≤ burstBytes; ≤ 0 means its work is dropped). */
  available(source: string, nowMs: number): number {
    const b = this.buckets.get(source);
    if (!b) return this.limits.burstBytes;
    this.refill(b, nowMs);
    return b.tokens;
  }

  /** Charges `bytes` of work done for `source` (may leave its balance negative). */
  charge(source: string, bytes: number, nowMs: number): void {
    if (bytes <= 0) return;
    let b = this.buckets.get(source);
    if (b) this.refill(b, nowMs);
    else {
      if (this.buckets.size >= this.maxSources) this.evict(nowMs);
      b = { tokens: this.limits.burstBytes, atMs: nowMs };
      this.buckets.set(source, b);
    }
    b.tokens -= bytes;
  }

  /** Sources tracked now (≤ the maxSources given). */
  get size(): number {
    return this.buckets.size;
  }

  private evict(nowMs: number): void {
    for (const [k, b] of this.buckets) {
      this.refill(b, nowMs);
      if (b.tokens >= this.limits.burstBytes) this.buckets.delete(k);
    }
    while (this.buckets.size >= this.maxSources) {
      const oldest = this.buckets.keys().next().value as string;
      this.buckets.delete(oldest);
    }
  }
}
