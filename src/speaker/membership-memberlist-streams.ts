/**
 * The memberlist member's inbound and outbound TCP streams, byte side: one stream message read from
 * a socket with a deadline (memberlist's readStream), the label and message framing done by the
 * pure readStreamLabel / decodeStreamMessage (src/core/membership/stream.ts), the bytes held by
 * inbound streams bounded by INBOUND_STREAM_BUDGET_BYTES, and decode attempts spaced so a large or
 * trickled stream costs linear, not quadratic, work.
 */
import type net from 'node:net';
import type { DecodeAllowance } from '../core/membership/decode-allowance.ts';
import { IncompleteError, MAX_STREAM_BYTES, WireError, decodeStreamMessage, readStreamLabel, streamMessageLength, type StreamMessage, type WireOptions } from '../core/membership/messages.ts';

/**
 * Bytes all inbound streams together may buffer before their message is decoded: 64 MiB.
 * memberlist's per-stream limit (MAX_STREAM_BYTES, its maxPushStateBytes: 20 MB) alone would let
 * MAX_INBOUND_STREAMS hostile streams hold about 10 GB until their TCPTimeout deadline, while a
 * real push/pull is a few KB (a 50-member cluster's table) and at most 127 run at once. When a
 * chunk would take the total over, the inbound stream holding the most bytes is closed (the
 * receiving stream itself when it would be the largest) until the chunk fits, counted as
 * `dropped.streamBudget`: flooding streams cannot crowd out a small push/pull or fallback ping.
 * What is counted is the capacity of the streams' buffers, allocated only for bytes received
 * (never for a length an encrypted stream's header announces), growing by doubling but never past
 * the budget left; it is released when the stream's message is decoded or it fails or closes.
 * Streams this
 * member opens (its own push/pulls and fallback pings) are bounded by MAX_STREAM_BYTES only.
 * metallb-ts's addition; memberlist has no such bound.
 */
export const INBOUND_STREAM_BUDGET_BYTES = 64 * 1024 * 1024;

/**
 * Pause without new bytes (ms) after which a stream whose length is unknown is decoded again
 * (a whole message that arrived in pieces too small to trigger STREAM_DECODE_GROWTH); the pause
 * doubles after each such attempt that finds the message incomplete, so a peer trickling bytes
 * gets about log2(TCPTimeout / 20 ms) of these attempts.
 */
export const STREAM_IDLE_DECODE_MS = 20;

/**
 * A stream whose length is unknown is decoded on its first bytes, then again once its buffered
 * bytes have grown by this factor since the last attempt that found it incomplete: the attempts
 * over a stream of n bytes cost O(n) together, however small its chunks.
 */
export const STREAM_DECODE_GROWTH = 1.5;

/**
 * The longest delay Node's timers take: 2^31 − 1 ms (about 24.8 days). A longer one (a Go duration
 * such as TCPTimeout "720h", which Go's timers take) would make Node warn (TimeoutOverflowWarning)
 * and fire after 1 ms, closing every stream at once.
 */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * A delay (ms, from a config duration) as Node's setTimeout can take it: at most
 * MAX_TIMER_DELAY_MS (a timer that far out is, as in Go, effectively never), at least 1 ms (Node's
 * own floor; NaN also gives 1 ms, as Node would).
 */
export function timerDelayMs(ms: number): number {
  return ms >= MAX_TIMER_DELAY_MS ? MAX_TIMER_DELAY_MS : ms > 1 ? ms : 1;
}

/** Bytes one stream may buffer: a message of MAX_STREAM_BYTES plus room for its framing. */
const STREAM_READ_LIMIT = MAX_STREAM_BYTES + 1024;

/** An inbound stream's share of INBOUND_STREAM_BUDGET_BYTES; `evict` closes it (synchronously releasing `bytes`). */
export interface BudgetHolder {
  bytes: number;
  evict(): void;
}

/** The bytes all inbound streams hold (INBOUND_STREAM_BUDGET_BYTES), and who holds them. */
export class InboundStreamBudget {
  /** Sum of `holders[].bytes` (the member's inboundBufferedBytes). */
  buffered = 0;
  /** Bytes received by inbound streams not yet decoded (inboundReceivedBytes). */
  received = 0;
  readonly holders = new Set<BudgetHolder>();

  /**
   * Charges `n` more bytes of `holder` to INBOUND_STREAM_BUDGET_BYTES. While they do not fit, the
   * holder with the most bytes is evicted — `holder` itself when it would be that large (ties
   * included) — and false is returned once `holder` was. Each eviction frees a stream's bytes, so
   * the loop ends.
   */
  charge(holder: BudgetHolder, n: number): boolean {
    while (this.buffered + n > INBOUND_STREAM_BUDGET_BYTES) {
      let largest: BudgetHolder | null = null;
      for (const h of this.holders) if (h !== holder && (!largest || h.bytes > largest.bytes)) largest = h;
      if (!largest || holder.bytes + n >= largest.bytes) {
        holder.evict();
        return false;
      }
      largest.evict();
    }
    holder.bytes += n;
    this.buffered += n;
    return true;
  }
}

/** What readStreamMessage needs of the member: its wire options, decoding allowance, budget, counters and handler guard. */
export interface StreamReadContext {
  readonly wire: WireOptions;
  readonly allowance: DecodeAllowance;
  readonly budget: InboundStreamBudget;
  readonly counters: { streamDecodeAttempts: number };
  guard(where: string, fn: () => void, onError?: () => void): void;
}

/**
 * Reads one stream message from a socket (after an optional label header), with a deadline.
 * `inbound` marks a stream a peer opened: its bytes count against INBOUND_STREAM_BUDGET_BYTES
 * (rejects with WireError `streamBudget` when evicted), and `inbound.onType` sees the first byte
 * after the label (the message type, or compress/encrypt) as soon as it arrives; returning a
 * reason aborts the read with WireError(reason).
 *
 * Bytes accumulate in one buffer grown geometrically (amortised linear copying). A decode is
 * attempted only when it can make progress: for an encrypted stream (its length is given up
 * front, when this member has a key) once every byte is there; otherwise on the first bytes,
 * whenever the buffered bytes have grown STREAM_DECODE_GROWTH times since the last attempt
 * that found the message incomplete, and after a pause of STREAM_IDLE_DECODE_MS without new
 * bytes (doubling after each such attempt). Attempts are counted in `streamDecodeAttempts`.
 */
export function readStreamMessage(ctx: StreamReadContext, sock: net.Socket, timeoutMs: number, inbound?: { onType: (type: number) => string | null }): Promise<StreamMessage> {
  return new Promise((resolve, reject) => {
    let buf = new Uint8Array(0); // capacity buf.length; the stream's bytes are buf[0, size)
    let size = 0;
    let labelChecked = false;
    let onType = inbound?.onType;
    let lastTried = 0; // size at the last attempt that found the message incomplete; 0: none yet
    let idleMs = STREAM_IDLE_DECODE_MS;
    let idle: NodeJS.Timeout | null = null;
    let finished = false;
    const holder: BudgetHolder | null = inbound ? { bytes: 0, evict: () => done(new WireError('streamBudget', 'inbound stream budget exceeded')) } : null;
    if (holder) ctx.budget.holders.add(holder);
    const done = (err: Error | null, msg?: StreamMessage): void => {
      if (finished) return;
      finished = true;
      clearTimeout(t);
      if (idle) clearTimeout(idle);
      if (holder) {
        ctx.budget.buffered -= holder.bytes;
        ctx.budget.received -= size;
        holder.bytes = 0;
        ctx.budget.holders.delete(holder);
      }
      buf = new Uint8Array(0);
      sock.off('data', onDataGuarded);
      sock.off('end', onEnd);
      sock.off('close', onEnd);
      sock.off('error', onErr);
      if (err) reject(err);
      else resolve(msg!);
    };
    const t = setTimeout(() => done(new WireError('timeout', 'stream read timed out')), timerDelayMs(timeoutMs));
    t.unref();
    const onEnd = (): void => done(new WireError('truncated', 'stream closed before a whole message'));
    const onErr = (e: Error): void => done(e);
    /**
     * Grows the buffer to hold at least `min` bytes (bytes actually received, never a length a
     * header announces): doubling, up to STREAM_READ_LIMIT and, for an inbound stream, the
     * budget left, which is charged the capacity added. False when the stream was evicted.
     */
    const grow = (min: number): boolean => {
      let capacity = Math.min(STREAM_READ_LIMIT, Math.max(min, 2 * buf.length));
      if (holder) {
        const left = INBOUND_STREAM_BUDGET_BYTES - ctx.budget.buffered;
        if (capacity - buf.length > left) capacity = Math.max(min, buf.length + left);
        if (!ctx.budget.charge(holder, capacity - buf.length)) return false;
      }
      const next = new Uint8Array(capacity);
      next.set(buf.subarray(0, size));
      buf = next;
      return true;
    };
    const attempt = (): void => {
      if (idle) {
        clearTimeout(idle);
        idle = null;
      }
      ctx.counters.streamDecodeAttempts++;
      const source = sock.remoteAddress ?? '';
      const now = Date.now();
      const allowance = ctx.allowance.available(source, now);
      if (allowance <= 0) return done(new WireError('rateLimited', 'the source exceeded its decoding allowance'));
      try {
        const { msg, unpackedBytes } = decodeStreamMessage(buf.subarray(0, size), ctx.wire, allowance);
        ctx.allowance.charge(source, unpackedBytes, now);
        done(null, msg);
      } catch (e) {
        if (e instanceof IncompleteError) {
          lastTried = size;
          return;
        }
        if (e instanceof WireError) ctx.allowance.charge(source, e.unpackedBytes, now);
        done(e instanceof Error ? e : new Error(String(e)));
      }
    };
    const onIdle = (): void => {
      idle = null;
      if (finished || size <= lastTried) return;
      idleMs *= 2;
      attempt();
    };
    // an exception out of onData (a bug) fails this stream and is counted `internalError`
    const onDataGuarded = (chunk: Buffer): void =>
      ctx.guard('stream data', () => {
        try {
          onData(chunk);
        } catch (e) {
          done(new WireError('internal', `internal error: ${e instanceof Error ? e.message : String(e)}`));
          throw e;
        }
      });
    const onData = (chunk: Buffer): void => {
      if (size + chunk.length > STREAM_READ_LIMIT) return done(new WireError('oversized', 'stream message too large'));
      if (size + chunk.length > buf.length && !grow(size + chunk.length)) return;
      buf.set(chunk, size);
      size += chunk.length;
      if (holder) ctx.budget.received += chunk.length;
      if (!labelChecked) {
        let n: number | null;
        try {
          n = readStreamLabel(buf.subarray(0, size), ctx.wire.label);
        } catch (e) {
          return done(e as WireError);
        }
        if (n === null) return;
        if (n > 0) {
          buf.copyWithin(0, n, size);
          size -= n;
          if (holder) ctx.budget.received -= n;
        }
        labelChecked = true;
      }
      if (size === 0) return;
      if (onType) {
        const refused = onType(buf[0]!);
        onType = undefined;
        if (refused) return done(new WireError(refused, `refused: ${refused}`));
      }
      // without a key an encrypted stream fails at once in decodeStreamMessage: no need to wait
      const needed = ctx.wire.keyring ? streamMessageLength(buf.subarray(0, size)) : null;
      if (needed !== null) {
        if (size >= needed || needed > STREAM_READ_LIMIT) return attempt(); // whole, or announced too large (decode says oversized)
        return; // the buffer grows as bytes arrive, not to the announced length
      }
      if (lastTried === 0 || size >= lastTried * STREAM_DECODE_GROWTH) return attempt();
      if (idle) idle.refresh();
      else {
        idle = setTimeout(onIdle, timerDelayMs(idleMs));
        idle.unref();
      }
    };
    sock.on('data', onDataGuarded);
    sock.on('end', onEnd);
    sock.on('close', onEnd);
    sock.on('error', onErr);
  });
}
