/**
 * What the memberlist member drops, counted by reason and logged at most once a minute per
 * reason (metallb-ts's addition: memberlist logs every drop). The counts are the member's
 * `stats().dropped`, exported as metallb_speaker_memberlist_dropped_total (memberlist-metrics.ts).
 */
import { rfc3339Utc } from '../runtime/utc-time.ts';
/** A drop reason is logged at most once per this many ms (with the count since the last line). */
export const DROP_LOG_INTERVAL_MS = 60_000;

/**
 * What each drop reason means, for the log line and the README. Reasons not listed are logged
 * with their name only.
 */
export const DROP_REASON_HINTS: Readonly<Record<string, string>> = {
  decrypt: 'cannot be decrypted, or is not encrypted while a key is set: a wrong or missing memberlist key?',
  label: 'carries another label (or none)',
  malformed: 'not memberlist wire format',
  truncated: 'ends before its message does',
  crc: 'fails its CRC',
  unknownType: 'an unknown message type',
  oversized: 'larger than memberlist accepts',
  oversizedMeta: 'a node meta larger than 512 bytes',
  oversizedName: 'a node name longer than 512 bytes',
  amplification: 'unpacks beyond 64 KiB or 512 messages in one packet',
  rateLimited: 'its source address exceeded its decoding allowance',
  streamLimit: 'one inbound stream too many (512 open)',
  streamBudget: 'inbound streams buffer more than 64 MiB together',
  pushPullLimit: 'one push/pull too many in flight (128)',
  timeout: 'a stream that did not finish in time',
};

/** Reasons logged elsewhere (aggregated already), not by the once-a-minute drop log. */
const DROPS_LOGGED_ELSEWHERE = new Set(['handoffQueueFull', 'internalError']);

/**
 * Counts dropped packets and streams by reason into `dropped` (the member's counters) and logs each
 * reason at most once per DROP_LOG_INTERVAL_MS with how many were dropped since its last line
 * (reasons in DROPS_LOGGED_ELSEWHERE are counted only).
 */
export class DropLog {
  private readonly dropped: Record<string, number>;
  private readonly log: (message: string) => void;
  /** Per reason: when it was last logged and its count then. */
  private readonly logged = new Map<string, { atMs: number; count: number }>();

  constructor(dropped: Record<string, number>, log: (message: string) => void) {
    this.dropped = dropped;
    this.log = log;
  }

  /**
   * Counts a dropped packet or stream by reason and logs it, at most once per reason per
   * DROP_LOG_INTERVAL_MS, with how many were dropped since the last line and the last source.
   */
  count(reason: string, from?: string): void {
    const count = (this.dropped[reason] ?? 0) + 1;
    this.dropped[reason] = count;
    if (DROPS_LOGGED_ELSEWHERE.has(reason)) return;
    const now = Date.now();
    const last = this.logged.get(reason);
    if (last && now - last.atMs < DROP_LOG_INTERVAL_MS) return;
    this.logged.set(reason, { atMs: now, count });
    const n = count - (last?.count ?? 0);
    const hint = DROP_REASON_HINTS[reason];
    this.log(
      `memberlist: dropped ${n === 1 ? 'a packet or stream' : `${n} packets or streams`} (reason ${reason}${hint ? `: ${hint}` : ''})${from ? `, the last from ${from}` : ''}${last ? ` since ${rfc3339Utc(last.atMs)}` : ''}; this reason is logged at most once a minute, all are counted in metallb_speaker_memberlist_dropped_total`,
    );
  }
}
