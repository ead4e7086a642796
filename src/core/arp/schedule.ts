/**
 * When to send gratuitous ARPs / unsolicited NAs, as MetalLB announcer.go spamLoop: on taking an IP
 * over, one at once; then on a shared 1100 ms ticker, one per IP until 5 s have passed since the
 * (last) takeover. Taking over an IP still in its window extends the window without an immediate send.
 * Pure state transitions; the shell owns the timer (started while the state is not empty).
 */

/** Interval of the gratuitous ticker, in milliseconds. */
export const GRATUITOUS_INTERVAL_MS = 1100;
/** How long after a takeover gratuitous announcements continue, in milliseconds. */
export const GRATUITOUS_WINDOW_MS = 5000;

/** IP → end of its gratuitous window (epoch ms). */
export type GratuitousState = ReadonlyMap<string, number>;

/** Takes `ip` over at `nowMs`: the new state and whether to send at once (not when already in a window). */
export function takeOver(state: GratuitousState, ip: string, nowMs: number): { state: GratuitousState; sendNow: boolean } {
  const next = new Map(state);
  return { state: next, sendNow: takeOverInPlace(next, ip, nowMs) };
}

/**
 * {@link takeOver} on a state the caller owns, updated in place (no copy: the speaker takes 1,000
 * IPs over in a burst, and a copy per IP made that burst quadratic in garbage). Returns whether to
 * send at once.
 */
export function takeOverInPlace(state: Map<string, number>, ip: string, nowMs: number): boolean {
  const sendNow = !state.has(ip);
  state.set(ip, nowMs + GRATUITOUS_WINDOW_MS);
  return sendNow;
}

/** A ticker tick at `nowMs`: the IPs to announce again, and the state without expired windows. */
export function tick(state: GratuitousState, nowMs: number): { state: Map<string, number>; send: string[] } {
  const next = new Map<string, number>();
  const send: string[] = [];
  for (const [ip, until] of state) {
    if (nowMs > until) continue;
    next.set(ip, until);
    send.push(ip);
  }
  return { state: next, send };
}

/** Stops announcing `ip` at once (withdrawn: MetalLB's gratuitous() skips IPs without references). */
export function forget(state: GratuitousState, ip: string): GratuitousState {
  if (!state.has(ip)) return state;
  const next = new Map(state);
  next.delete(ip);
  return next;
}

/**
 * The send offsets (ms after takeover) for one IP when the ticker starts with it:
 * [0, 1100, 2200, 3300, 4400] — five announcements, 1.1 s apart, within 5 s.
 */
export function gratuitousOffsetsMs(): number[] {
  let state: GratuitousState = new Map();
  const first = takeOver(state, 'x', 0);
  state = first.state;
  const out = first.sendNow ? [0] : [];
  for (let t = GRATUITOUS_INTERVAL_MS; state.size; t += GRATUITOUS_INTERVAL_MS) {
    const r = tick(state, t);
    state = r.state;
    if (r.send.length) out.push(t);
  }
  return out;
}
