/**
 * Kubernetes `metav1.Duration` values: Go's `time.ParseDuration` syntax, kept in whole
 * nanoseconds (bigint) so that MetalLB's arithmetic (hold / 3) is reproduced exactly.
 */
import { quote } from '../errors.ts';

const UNIT_NS: Record<string, bigint> = {
  ns: 1n,
  us: 1000n,
  µs: 1000n,
  μs: 1000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

/**
 * Parses a Go duration string (`180s`, `1.5s`, `500ms`, `1h2m`, `-3s`, `0`) to nanoseconds,
 * truncating sub-nanosecond fractions as Go does.
 * @throws Error when the string is not a valid duration.
 */
export function parseDurationNs(text: string): bigint {
  if (typeof text !== 'string') throw new Error(`invalid duration ${quote(text)}`);
  let s = text;
  let neg = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') throw new Error(`invalid duration "${text}"`);
  let total = 0n;
  const re = /^([0-9]*)(?:\.([0-9]*))?(ns|us|µs|μs|ms|s|m|h)/u;
  while (s.length > 0) {
    const m = re.exec(s);
    if (!m || (m[1] === '' && (m[2] ?? '') === '')) throw new Error(`invalid duration "${text}"`);
    const unit = UNIT_NS[m[3]];
    const whole = m[1] === '' ? 0n : BigInt(m[1]);
    let value = whole * unit;
    const frac = m[2] ?? '';
    if (frac !== '') value += (BigInt(frac) * unit) / 10n ** BigInt(frac.length);
    total += value;
    s = s.slice(m[0].length);
  }
  return neg ? -total : total;
}

/** Nanoseconds as (possibly fractional) seconds, e.g. 3333333333n → 3.333333333. */
export function nsToSeconds(ns: bigint): number {
  const whole = ns / 1_000_000_000n;
  const rest = ns % 1_000_000_000n;
  return Number(whole) + Number(rest) / 1e9;
}

/** Seconds (as nsToSeconds gives them) back to whole nanoseconds, rounded to the nearest. */
export function secondsToNs(seconds: number): bigint {
  const whole = Math.trunc(seconds);
  return BigInt(whole) * 1_000_000_000n + BigInt(Math.round((seconds - whole) * 1e9));
}

function fraction(v: bigint, digits: number): string {
  // v < 10^digits: `.ddd` without trailing zeros, or "" when v is 0 (Go's fmtFrac).
  if (v === 0n) return '';
  return `.${v.toString().padStart(digits, '0').replace(/0+$/, '')}`;
}

/**
 * Go's `time.Duration.String()` of `ns` nanoseconds, as `metav1.Duration` marshals it:
 * `0s`, `1.5µs`, `500ms`, `30s`, `1m30s`, `1h0m0s`, negative values with a leading `-`.
 */
export function formatDurationNs(ns: bigint): string {
  if (ns === 0n) return '0s';
  const neg = ns < 0n;
  let u = neg ? -ns : ns;
  let out: string;
  if (u < 1_000_000_000n) {
    // Below a second: the largest of ns, µs, ms that keeps an integer part.
    if (u < 1000n) out = `${u}ns`;
    else if (u < 1_000_000n) out = `${u / 1000n}${fraction(u % 1000n, 3)}µs`;
    else out = `${u / 1_000_000n}${fraction(u % 1_000_000n, 6)}ms`;
  } else {
    const secs = u / 1_000_000_000n;
    const frac = fraction(u % 1_000_000_000n, 9);
    u = secs;
    const s = u % 60n;
    u /= 60n;
    if (u === 0n) out = `${s}${frac}s`;
    else {
      const m = u % 60n;
      const h = u / 60n;
      out = h === 0n ? `${m}m${s}${frac}s` : `${h}h${m}m${s}${frac}s`;
    }
  }
  return neg ? `-${out}` : out;
}
