/**
 * A work queue with client-go's semantics (what controller-runtime runs MetalLB's reconcilers on):
 * keys are deduplicated while waiting, a key being processed is never handed out twice (a re-add
 * during processing is queued again once `done` is called), and failed keys come back after a
 * per-key exponential backoff (`addRateLimited`, reset by `forget`).
 */

/** Timer functions, injectable so tests can drive time. */
export interface Clock {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The real clock (timers are unref'd: a pending retry alone does not keep the process alive). */
export const realClock: Clock = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/**
 * client-go's ItemExponentialFailureRateLimiter: the n-th consecutive failure of a key waits
 * `baseDelayMs * 2^(n-1)`, capped at `maxDelayMs`. controller-runtime's defaults: 5 ms and 1000 s.
 */
export class ExponentialBackoff {
  private readonly failures = new Map<string, number>();
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;

  constructor(baseDelayMs = 5, maxDelayMs = 1_000_000) {
    this.baseDelayMs = baseDelayMs;
    this.maxDelayMs = maxDelayMs;
  }

  /** Records one more failure of `key` and returns how long to wait before retrying it (ms). */
  when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    return Math.min(this.baseDelayMs * 2 ** n, this.maxDelayMs);
  }

  /** Consecutive failures recorded for `key`. */
  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Clears the failure count of `key` (after a success). */
  forget(key: string): void {
    this.failures.delete(key);
  }
}

/** Counters a queue reports (MetalLB exports controller-runtime's workqueue_* metrics). */
export interface QueueHooks {
  /** a key was queued (not when it was already waiting) */
  onAdd?(key: string): void;
  /** a key was scheduled for a retry after `delayMs` */
  onRetry?(key: string, delayMs: number): void;
  /** the number of waiting keys changed */
  onDepth?(depth: number): void;
}

/** The work queue (see the module comment). */
export class WorkQueue {
  private readonly queue: string[] = [];
  private head = 0;
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, unknown>();
  private readonly waiters: Array<(key: string | null) => void> = [];
  private shut = false;
  readonly backoff: ExponentialBackoff;
  private readonly clock: Clock;
  private readonly hooks: QueueHooks;

  constructor(opts: { backoff?: ExponentialBackoff; clock?: Clock; hooks?: QueueHooks } = {}) {
    this.backoff = opts.backoff ?? new ExponentialBackoff();
    this.clock = opts.clock ?? realClock;
    this.hooks = opts.hooks ?? {};
  }

  /** Keys waiting to be handed out. */
  get length(): number {
    return this.queue.length - this.head;
  }

  /** Whether nothing waits, nothing is being processed and no retry is scheduled. */
  get idle(): boolean {
    return this.length === 0 && this.processing.size === 0 && this.delayed.size === 0;
  }

  /** Keys handed out and not yet `done`. */
  get inFlight(): number {
    return this.processing.size;
  }

  /** Queues `key` unless it is already waiting; a key being processed is queued again after `done`. */
  add(key: string): void {
    if (this.shut || this.dirty.has(key)) return;
    this.dirty.add(key);
    this.hooks.onAdd?.(key);
    if (this.processing.has(key)) return;
    this.push(key);
  }

  /** Queues `key` after its backoff delay (one more failure recorded). */
  addRateLimited(key: string): void {
    if (this.shut) return;
    const delayMs = this.backoff.when(key);
    this.hooks.onRetry?.(key, delayMs);
    this.addAfter(key, delayMs);
  }

  /** Queues `key` after `delayMs` (an earlier pending delay for the key is kept if sooner). */
  addAfter(key: string, delayMs: number): void {
    if (this.shut) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    if (this.delayed.has(key)) return;
    const handle = this.clock.setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.delayed.set(key, handle);
  }

  /** Clears the backoff of `key`. */
  forget(key: string): void {
    this.backoff.forget(key);
  }

  /** The next key, waiting until there is one; null once shut down. The caller must call `done(key)`. */
  get(): Promise<string | null> {
    const key = this.take();
    if (key !== undefined) return Promise.resolve(key);
    if (this.shut) return Promise.resolve(null);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The next key if one waits (then the caller must call `done(key)`), else undefined. */
  tryGet(): string | undefined {
    return this.take();
  }

  /** Marks `key` processed; if it was added meanwhile it is queued again. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) this.push(key);
  }

  /** Stops handing out keys: waiting `get` calls resolve to null, pending retries are dropped. */
  shutDown(): void {
    this.shut = true;
    for (const h of this.delayed.values()) this.clock.clearTimeout(h);
    this.delayed.clear();
    for (const w of this.waiters.splice(0)) w(null);
  }

  private push(key: string): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      this.dirty.delete(key);
      this.processing.add(key);
      this.hooks.onDepth?.(this.length);
      waiter(key);
      return;
    }
    this.queue.push(key);
    this.hooks.onDepth?.(this.length);
  }

  private take(): string | undefined {
    if (this.head >= this.queue.length) return undefined;
    const key = this.queue[this.head++]!;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.dirty.delete(key);
    this.processing.add(key);
    this.hooks.onDepth?.(this.length);
    return key;
  }
}
