/**
 * memberlist v0.5.1's handoff between the UDP reader and the state machine (net.go
 * handleCommand, getNextMessage, packetHandler), as a pure data structure: no sockets, no timers.
 *
 * memberlist answers ping, indirect ping, ack and nack inline in the reader (failure detection
 * must not wait behind gossip), and hands alive messages to a high-priority queue and suspect,
 * dead and user messages to a low-priority queue, each bounded by HandoffQueueDepth (1024): a
 * message arriving at a full queue is dropped ("handler queue full, dropping message"). A
 * separate goroutine takes messages newest first (LIFO, `Back()`), the high-priority queue
 * before the low one. The shell (src/speaker/membership-memberlist.ts) drains it.
 */
import type { Message } from './messages.ts';

/** How memberlist's handleCommand treats a message type arriving in a packet. */
export type HandoffRoute = 'inline' | 'high' | 'low' | 'unsupported';

/**
 * The route of one message type (net.go handleCommand): ping, indirectPing, ack, nack inline;
 * alive high; suspect, dead, user low; err is not handled in packets ("msg type not supported").
 */
export function handoffRoute(type: Message['type']): HandoffRoute {
  switch (type) {
    case 'ping':
    case 'indirectPing':
    case 'ack':
    case 'nack':
      return 'inline';
    case 'alive':
      return 'high';
    case 'suspect':
    case 'dead':
    case 'user':
      return 'low';
    case 'err':
      return 'unsupported';
  }
}

/** The two bounded LIFO queues. `push` says whether the item was accepted; `next` pops. */
export class HandoffQueue<T> {
  /** Bound of each queue (items), memberlist's HandoffQueueDepth. */
  readonly depth: number;
  private readonly high: T[] = [];
  private readonly low: T[] = [];
  /** Items refused because their queue was full, since creation. */
  droppedCount = 0;

  /** `depth` ≥ 0 items per queue (0 drops everything). Throws RangeError for a negative or fractional depth. */
  constructor(depth: number) {
    if (!Number.isSafeInteger(depth) || depth < 0) throw new RangeError(`handoff queue depth must be a whole number ≥ 0, got ${depth}`);
    this.depth = depth;
  }

  /** Appends to the high or low queue; 'dropped' (and counted) when that queue holds `depth` items. */
  push(item: T, priority: 'high' | 'low'): 'accepted' | 'dropped' {
    const q = priority === 'high' ? this.high : this.low;
    if (q.length >= this.depth) {
      this.droppedCount++;
      return 'dropped';
    }
    q.push(item);
    return 'accepted';
  }

  /** The newest item of the high queue, else the newest of the low queue, else undefined. */
  next(): T | undefined {
    return this.high.length > 0 ? this.high.pop() : this.low.pop();
  }

  /** Items waiting in both queues. */
  get size(): number {
    return this.high.length + this.low.length;
  }

  /** Items waiting per queue. */
  sizes(): { high: number; low: number } {
    return { high: this.high.length, low: this.low.length };
  }

  /** Forgets every waiting item (a stopped member). */
  clear(): void {
    this.high.length = 0;
    this.low.length = 0;
  }
}
