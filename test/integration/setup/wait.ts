/** Polling helpers for integration tests. */
import assert from 'node:assert/strict';

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Polls `probe` every 100 ms until it returns a value other than undefined (a throw counts as "not
 * yet"); fails naming `what`, the last error and `detail()` after `ms` milliseconds.
 */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, detail: () => string = () => '', ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}\n${detail()}`);
    await sleep(100);
  }
}

const exitCleanups = new Set<() => void>();
let exitHooksInstalled = false;

/**
 * Runs `cleanup` (synchronous, best effort) when this process exits or gets SIGINT, SIGTERM or
 * SIGHUP — after which the signal is re-raised so the process still ends with it. Each function is
 * registered once, however often this is called: the test harnesses' "kill what I started" hooks.
 */
export function onProcessExit(cleanup: () => void): void {
  exitCleanups.add(cleanup);
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  const runAll = (): void => {
    for (const fn of exitCleanups) {
      try {
        fn();
      } catch {
        /* best effort */
      }
    }
  };
  process.on('exit', runAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      runAll();
      process.kill(process.pid, sig);
    });
  }
}
