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
