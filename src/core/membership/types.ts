/**
 * Who is alive: the speaker's view of the other speakers, the input of the L2 election's first
 * candidate filter (`speakers`). MetalLB v0.16.1 asks memberlist (`internal/speakerlist`); with
 * memberlist disabled every Node counts. Implementations: the API node list (memberlist disabled,
 * src/speaker/membership.ts) now; the memberlist-compatible gossip member (issue #5) later.
 */

/** A change of the alive set; `alive` is the new value of `Membership.alive()`. */
export interface MembershipChange {
  readonly alive: readonly string[] | null;
}

/** Called after every change of the alive set (the speaker then resyncs every service). */
export type MembershipListener = (change: MembershipChange) => void;

/**
 * A source of live speakers. Lifecycle: `start()` once (resolves when the first view is known,
 * e.g. after joining), `alive()` any time after, `stop()` once (leaves the cluster; idempotent).
 */
export interface Membership {
  /** Starts the member. Rejects (one-line message) when it cannot start, e.g. a bind failure. */
  start(): Promise<void>;
  /** Stops the member (graceful leave where the protocol has one). Never rejects. */
  stop(): Promise<void>;
  /**
   * Node names of the speakers considered alive, sorted and unique; `null` when membership is
   * disabled, meaning every Node object counts as a live speaker (MetalLB's `Disabled` list).
   */
  alive(): string[] | null;
  /** Registers a listener for changes of `alive()`; listeners run in registration order. */
  onChange(cb: MembershipListener): void;
}
