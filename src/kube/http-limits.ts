/**
 * The errors of a bounded HTTP read (KubeClient.request's `deadlineMs` / `maxBytes`, and the
 * direct `--speaker` read): one line each, with a `code` callers match on. No dependencies, so the
 * light modules (src/kube/speaker-view.ts) share them with src/kube/client.ts.
 */

/** `code` of the error for a request past its deadline or idle timeout (as node's sockets use it). */
export const TIMED_OUT = 'ETIMEDOUT';

/** `code` of the error for an answer larger than its limit. */
export const RESPONSE_TOO_LARGE = 'ERESPONSETOOLARGE';

/** `no answer within N ms` (code ETIMEDOUT); `ms` is the deadline or idle timeout that passed. */
export function timeoutError(ms: number): Error & { code: string } {
  return Object.assign(new Error(`no answer within ${ms} ms`), { code: TIMED_OUT });
}

/** `answer larger than N bytes` (code ERESPONSETOOLARGE); `maxBytes` is the limit in bytes. */
export function tooLargeError(maxBytes: number): Error & { code: string } {
  return Object.assign(new Error(`answer larger than ${maxBytes} bytes`), { code: RESPONSE_TOO_LARGE });
}
