/**
 * memberlist's timing configuration (config.go DefaultLANConfig / DefaultWANConfig, v0.5.1), and
 * MetalLB v0.16.1's optional memberlist config file (`/etc/metallb/memberlist/config.json`,
 * speakerlist.go tryToLoadMemberListConfig), parsed strictly. All durations in milliseconds,
 * sizes in bytes.
 */
import { InputError } from '../errors.ts';

/**
 * memberlist's Config fields this implementation uses. Durations in milliseconds (possibly
 * fractional: a Go duration has nanosecond resolution), sizes in bytes.
 *
 * `probeIntervalMs`, `gossipIntervalMs` and `pushPullIntervalMs` of 0 switch that timer off, as
 * memberlist's schedule() does (gossip is also off with `gossipNodes` 0).
 */
export interface MemberlistConfig {
  /** 0 = never probe (no failure detection by this member). */
  readonly probeIntervalMs: number;
  readonly probeTimeoutMs: number;
  readonly indirectChecks: number;
  readonly suspicionMult: number;
  readonly suspicionMaxTimeoutMult: number;
  readonly awarenessMaxMultiplier: number;
  /** 0 = never gossip. */
  readonly gossipIntervalMs: number;
  /** 0 = never gossip. */
  readonly gossipNodes: number;
  readonly gossipToTheDeadTimeMs: number;
  readonly retransmitMult: number;
  /** 0 = no periodic push/pull (joins still push/pull). */
  readonly pushPullIntervalMs: number;
  /** Deadline of every TCP exchange (join, push/pull, fallback ping), from accept/dial. */
  readonly tcpTimeoutMs: number;
  readonly udpBufferSize: number;
  readonly disableTcpPings: boolean;
  /** 0 = a dead member's name is never reclaimed by another address. */
  readonly deadNodeReclaimTimeMs: number;
  readonly enableCompression: boolean;
  readonly gossipVerifyIncoming: boolean;
  readonly gossipVerifyOutgoing: boolean;
  /**
   * Bound of each of the two handoff queues (alive; suspect/dead/user) between the UDP reader
   * and the state machine (memberlist's HandoffQueueDepth); a full queue drops the message.
   */
  readonly handoffQueueDepth: number;
  /**
   * memberlist samples its broadcast queue depth (a go-metrics gauge) this often. metallb-ts has no
   * such metric: the value is parsed and kept so a MetalLB config file loads unchanged, but unused.
   */
  readonly queueCheckIntervalMs: number;
}

/** DefaultLANConfig (what MetalLB uses without --ml-wan-config). */
export const LAN_CONFIG: MemberlistConfig = {
  probeIntervalMs: 1000,
  probeTimeoutMs: 500,
  indirectChecks: 3,
  suspicionMult: 4,
  suspicionMaxTimeoutMult: 6,
  awarenessMaxMultiplier: 8,
  gossipIntervalMs: 200,
  gossipNodes: 3,
  gossipToTheDeadTimeMs: 30_000,
  retransmitMult: 4,
  pushPullIntervalMs: 30_000,
  tcpTimeoutMs: 10_000,
  udpBufferSize: 1400,
  disableTcpPings: false,
  deadNodeReclaimTimeMs: 0,
  enableCompression: true,
  gossipVerifyIncoming: true,
  gossipVerifyOutgoing: true,
  handoffQueueDepth: 1024,
  queueCheckIntervalMs: 30_000,
};

/** DefaultWANConfig (--ml-wan-config). */
export const WAN_CONFIG: MemberlistConfig = {
  ...LAN_CONFIG,
  tcpTimeoutMs: 30_000,
  suspicionMult: 6,
  pushPullIntervalMs: 60_000,
  probeTimeoutMs: 3000,
  probeIntervalMs: 5000,
  gossipNodes: 4,
  gossipIntervalMs: 500,
  gossipToTheDeadTimeMs: 60_000,
};

/** A string Go's `time.ParseDuration` rejects; `message` says why, as Go's error does. */
export class DurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DurationError';
  }
}

const NS_PER_UNIT: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n],
  ['\u03bcs', 1_000n],
  ['ms', 1_000_000n],
  ['s', 1_000_000_000n],
  ['m', 60_000_000_000n],
  ['h', 3_600_000_000_000n],
]);
const MAX_INT64 = (1n << 63n) - 1n;

/**
 * Go's `time.ParseDuration` (go1.22 time/format.go), in nanoseconds: an optional sign, then one or
 * more decimal numbers, each with an optional fraction and a required unit (`ns`, `us`, `µs`,
 * `ms`, `s`, `m`, `h`), as in "300ms", "-1.5h", "2h45m", ".5s"; "0" alone needs no unit. Fractions
 * truncate toward zero as Go's float arithmetic does. Throws DurationError (invalid syntax,
 * missing or unknown unit, beyond ±2^63−1 ns).
 */
export function parseGoDurationNs(text: string): bigint {
  const bad = (why: string): never => {
    throw new DurationError(`${why} in duration ${JSON.stringify(text)}`);
  };
  let s = text;
  let neg = false;
  if (s !== '' && (s[0] === '-' || s[0] === '+')) {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') bad('invalid syntax');
  let total = 0n;
  while (s !== '') {
    if (!(s[0] === '.' || (s[0]! >= '0' && s[0]! <= '9'))) bad('invalid syntax');
    // the integer part
    let i = 0;
    let v = 0n;
    while (i < s.length && s[i]! >= '0' && s[i]! <= '9') {
      v = v * 10n + BigInt(s.charCodeAt(i) - 48);
      if (v > 1n << 63n) bad('overflow');
      i++;
    }
    const pre = i > 0;
    s = s.slice(i);
    // the fraction: digits accumulate while they fit an int64, as Go's leadingFraction
    let f = 0n;
    let scale = 1;
    let post = false;
    if (s[0] === '.') {
      s = s.slice(1);
      let j = 0;
      let overflow = false;
      while (j < s.length && s[j]! >= '0' && s[j]! <= '9') {
        if (!overflow) {
          const y = f * 10n + BigInt(s.charCodeAt(j) - 48);
          if (y > 1n << 63n) overflow = true;
          else {
            f = y;
            scale *= 10;
          }
        }
        j++;
      }
      post = j > 0;
      s = s.slice(j);
    }
    if (!pre && !post) bad('invalid syntax');
    let u = 0;
    while (u < s.length && s[u] !== '.' && !(s[u]! >= '0' && s[u]! <= '9')) u++;
    if (u === 0) bad('missing unit');
    const unitName = s.slice(0, u);
    const unit = NS_PER_UNIT.get(unitName);
    if (unit === undefined) bad(`unknown unit ${JSON.stringify(unitName)}`);
    s = s.slice(u);
    if (v > (1n << 63n) / unit!) bad('overflow');
    v *= unit!;
    if (f > 0n) {
      v += BigInt(Math.trunc(Number(f) * (Number(unit!) / scale)));
      if (v > 1n << 63n) bad('overflow');
    }
    total += v;
    if (total > 1n << 63n) bad('overflow');
  }
  if (neg) return -total;
  if (total > MAX_INT64) bad('overflow');
  return total;
}

/** `parseGoDurationNs` in milliseconds (fractional below 1 ms). Throws DurationError. */
export function parseGoDuration(text: string): number {
  return Number(parseGoDurationNs(text)) / 1e6;
}

type FieldKind = 'duration' | 'int' | 'bool';

/** One field of MetalLB's memberlistFileConfig, the MemberlistConfig key it sets, and its lower bound. */
interface FileField {
  readonly name: string;
  readonly kind: FieldKind;
  readonly key: keyof MemberlistConfig;
  /** Values below `min` are refused with `why` (memberlist accepts them but stops working). */
  readonly min?: { readonly value: number; readonly why: string };
}

/** MetalLB v0.16.1's memberlistFileConfig, in its declaration order. */
const FILE_FIELDS: readonly FileField[] = [
  { name: 'TCPTimeout', kind: 'duration', key: 'tcpTimeoutMs', min: { value: 1e-6, why: 'every join, push/pull and TCP ping would time out at once' } },
  { name: 'IndirectChecks', kind: 'int', key: 'indirectChecks' },
  { name: 'RetransmitMult', kind: 'int', key: 'retransmitMult' },
  { name: 'SuspicionMult', kind: 'int', key: 'suspicionMult' },
  { name: 'SuspicionMaxTimeoutMult', kind: 'int', key: 'suspicionMaxTimeoutMult' },
  { name: 'PushPullInterval', kind: 'duration', key: 'pushPullIntervalMs' },
  { name: 'ProbeTimeout', kind: 'duration', key: 'probeTimeoutMs' },
  { name: 'ProbeInterval', kind: 'duration', key: 'probeIntervalMs' },
  { name: 'DisableTcpPings', kind: 'bool', key: 'disableTcpPings' },
  { name: 'AwarenessMaxMultiplier', kind: 'int', key: 'awarenessMaxMultiplier', min: { value: 1, why: 'memberlist would scale every probe timeout to 0' } },
  { name: 'GossipNodes', kind: 'int', key: 'gossipNodes' },
  { name: 'GossipInterval', kind: 'duration', key: 'gossipIntervalMs' },
  { name: 'GossipToTheDeadTime', kind: 'duration', key: 'gossipToTheDeadTimeMs' },
  { name: 'GossipVerifyIncoming', kind: 'bool', key: 'gossipVerifyIncoming' },
  { name: 'GossipVerifyOutgoing', kind: 'bool', key: 'gossipVerifyOutgoing' },
  { name: 'EnableCompression', kind: 'bool', key: 'enableCompression' },
  { name: 'HandoffQueueDepth', kind: 'int', key: 'handoffQueueDepth', min: { value: 1, why: 'every alive, suspect and dead message would be dropped' } },
  { name: 'UDPBufferSize', kind: 'int', key: 'udpBufferSize', min: { value: 1, why: 'no gossip would fit in a packet' } },
  { name: 'QueueCheckInterval', kind: 'duration', key: 'queueCheckIntervalMs' },
];

/** The field names MetalLB's memberlist config file must set, in MetalLB's order. */
export const MEMBERLIST_FILE_FIELDS: readonly string[] = FILE_FIELDS.map((f) => f.name);

function levenshtein(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return row[b.length]!;
}

function describe(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : JSON.stringify(v);
}

/** What parseMemberlistConfigFile found: the configuration, and one-line warnings (unknown fields). */
export interface MemberlistFileResult {
  readonly config: MemberlistConfig;
  /**
   * One line each, naming the file, e.g.
   * `/etc/metallb/memberlist/config.json: unknown field "ProbeIntervall" ignored (did you mean ProbeInterval?; MetalLB ignores unknown fields too)`.
   */
  readonly warnings: readonly string[];
}

/** JSON's integer literal (RFC 8259 `int` with its optional minus): what Go's encoding/json accepts for an int field. */
const JSON_INTEGER = /^-?(?:0|[1-9][0-9]*)$/;

/** The "did you mean" hint for a key matching no field: the nearest field name, or the list of all. */
function nearestField(key: string): string {
  const near = FILE_FIELDS.map((f) => ({ f, d: levenshtein(f.name.toLowerCase(), key.toLowerCase()) })).sort((a, b) => a.d - b.d)[0]!;
  return near.d <= 3 ? `did you mean ${near.f.name}?` : `fields: ${MEMBERLIST_FILE_FIELDS.join(', ')}`;
}

/**
 * Parses MetalLB v0.16.1's memberlist config file (JSON, the 19 fields of memberlistFileConfig:
 * durations as Go duration strings, counts as integers, flags as booleans) into a
 * MemberlistConfig. As MetalLB, the result starts from DefaultLANConfig (also when the speaker
 * runs with --ml-wan-config): the file replaces the defaults, it does not patch them.
 *
 * As Go's encoding/json (which MetalLB uses): names match case-insensitively; a name matching no
 * field is ignored — here with a warning in `warnings` carrying a "did you mean" hint, so a
 * ConfigMap MetalLB accepts also starts metallb-ts; a count must be a JSON integer literal (`3`,
 * not `3.0` or `3e0`: Go refuses those with "cannot unmarshal number 3.0 into Go struct field …
 * of type int"); durations are parsed as Go's time.ParseDuration.
 *
 * Stricter than MetalLB, which fills an omitted number or flag with 0/false silently: every field
 * is required (a missing one is an error; when an unknown name looks like a typo of it the error
 * says so); one field given twice under two spellings is an error; wrong types, negative numbers,
 * numbers beyond 2^53 and negative durations are errors; TCPTimeout, AwarenessMaxMultiplier,
 * HandoffQueueDepth, UDPBufferSize of 0 are errors (memberlist accepts them and stops working); so
 * is ProbeTimeout 0 while ProbeInterval is not 0. ProbeInterval, GossipInterval, PushPullInterval
 * (and GossipNodes) of 0 are accepted and switch that timer off, as in memberlist. Durations may be
 * as long as Go allows (about 292 years); the member clamps its timers (see membership-memberlist.ts).
 *
 * Throws InputError (exit 2) whose one-line message names `path` and the field, e.g.
 * `/etc/metallb/memberlist/config.json: ProbeInterval: missing`.
 */
export function parseMemberlistConfigFile(text: string, path: string): MemberlistFileResult {
  const fail = (msg: string): never => {
    throw new InputError(path, msg);
  };
  // The JSON text of every number, by holder object and key (Node >= 24 passes it to the reviver).
  const numberSource = new WeakMap<object, Map<string, string>>();
  let doc: unknown;
  try {
    doc = JSON.parse(text, function (this: unknown, key: string, value: unknown, context?: { source?: string }) {
      if (typeof value === 'number' && context?.source !== undefined && this !== null && typeof this === 'object') {
        let m = numberSource.get(this);
        if (!m) numberSource.set(this, (m = new Map()));
        m.set(key, context.source);
      }
      return value;
    } as (this: unknown, key: string, value: unknown) => unknown);
  } catch (e) {
    fail(`not valid JSON: ${(e as Error).message}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) fail(`want a JSON object of memberlist settings, got ${describe(doc)}`);
  const given = new Map<FileField, { key: string; value: unknown }>();
  const unknown: string[] = [];
  for (const [key, value] of Object.entries(doc as Record<string, unknown>)) {
    const field = FILE_FIELDS.find((f) => f.name === key) ?? FILE_FIELDS.find((f) => f.name.toLowerCase() === key.toLowerCase());
    if (!field) {
      unknown.push(key);
      continue;
    }
    const prev = given.get(field);
    if (prev) fail(`${field.name}: given twice (${JSON.stringify(prev.key)} and ${JSON.stringify(key)})`);
    given.set(field, { key, value });
  }
  const warnings = unknown.map((key) => `${path}: unknown field ${JSON.stringify(key)} ignored (${nearestField(key)}; MetalLB ignores unknown fields too)`);
  const missing = FILE_FIELDS.filter((f) => !given.has(f)).map((f) => f.name);
  if (missing.length > 0) {
    const typos = unknown.filter((k) => missing.some((m) => nearestField(k) === `did you mean ${m}?`));
    const hint = typos.length > 0 ? `; ${typos.map((k) => `${JSON.stringify(k)}: ${nearestField(k)}`).join('; ')}` : '';
    fail(`${missing.join(', ')}: missing (every field of the file is required, as MetalLB documents${hint})`);
  }
  const sources = numberSource.get(doc as object);
  const out: Record<string, unknown> = { ...LAN_CONFIG };
  for (const field of FILE_FIELDS) {
    const { key, value } = given.get(field)!;
    const where = field.name;
    let n: number | boolean;
    if (field.kind === 'bool') {
      if (typeof value !== 'boolean') fail(`${where}: want true or false, got ${describe(value)}`);
      n = value as boolean;
    } else if (field.kind === 'int') {
      const source = sources?.get(key);
      if (typeof value === 'number' && source !== undefined && !JSON_INTEGER.test(source)) {
        fail(`${where}: want a whole number written as an integer, got ${source} (Go's encoding/json refuses it for an int field, and so does MetalLB)`);
      }
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) fail(`${where}: want a whole number, got ${source ?? describe(value)}`);
      if ((value as number) < 0) fail(`${where}: must not be negative, got ${source ?? value}`);
      n = (value as number) + 0; // -0 is 0
    } else {
      if (typeof value !== 'string') fail(`${where}: want a Go duration string such as "500ms" or "1m30s", got ${describe(value)}`);
      let ns: bigint;
      try {
        ns = parseGoDurationNs(value as string);
      } catch (e) {
        if (!(e instanceof DurationError)) throw e;
        return fail(`${where}: not a duration ${JSON.stringify(value)} (${e.message.replace(/ in duration .*$/, '')}; units ns, us, ms, s, m, h as in "200ms" or "1m30s")`);
      }
      if (ns < 0n) fail(`${where}: must not be negative, got ${JSON.stringify(value)}`);
      n = Number(ns) / 1e6;
    }
    if (field.min && typeof n === 'number' && n < field.min.value) fail(`${where}: must not be 0 (${field.min.why})`);
    out[field.key] = n;
  }
  const cfg = out as unknown as MemberlistConfig;
  if (cfg.probeIntervalMs > 0 && cfg.probeTimeoutMs <= 0) fail('ProbeTimeout: must not be 0 while ProbeInterval is set (every probe would fail at once; ProbeInterval "0" switches probing off)');
  return { config: cfg, warnings };
}
