/**
 * The failover budget of `explain` (issue #12 item 10): if the node announcing a Service in
 * Layer 2 dies, how long until the next node in the hash order answers for its addresses.
 *
 * The chain, as MetalLB v0.16.1 runs it (speakerlist.go over hashicorp memberlist v0.5):
 *  1. detection — some live speaker probes the dead one (each member probes one member per
 *     ProbeInterval) and the probe fails: no ack within ProbeTimeout, no indirect ack (through
 *     IndirectChecks members) nor TCP fallback until the end of the probe round (ProbeInterval):
 *     between 1 and 2 probe intervals after the death;
 *  2. suspicion — memberlist (Lifeguard) marks it suspect and declares it dead after
 *     min = SuspicionMult × max(1, log10(max(1, n))) × ProbeInterval when k = SuspicionMult − 2
 *     other members confirm the suspicion (k = 0 when n − 2 < k: then min exactly), up to
 *     max = SuspicionMaxTimeoutMult × min without confirmations;
 *  3. the dead message reaches every speaker by gossip (one GossipInterval, typically);
 *  4. the speakers resync (MetalLB's ForceSync on the memberlist event; metallb-ts debounces 20 ms):
 *     the next node in the hash order wins, announces, and sends a gratuitous ARP (IPv4) or an
 *     unsolicited neighbor advertisement (IPv6) at once, then every 1.1 s for 5 s.
 * A prober that is itself degraded (Lifeguard awareness) stretches its probe interval up to
 * AwarenessMaxMultiplier times; that is not in the figures.
 *
 * Without memberlist (a speaker without --ml-bindaddr or --ml-labels) every Node counts as a live
 * speaker: a dead node stays the winner until its Node object is deleted (or labelled with the
 * exclusion label, or NetworkUnavailable=True): no failover.
 *
 * Pure. The memberlist configuration in force comes from the speaker pods of the snapshot (their
 * flags and environment, and the ConfigMap mounted at /etc/metallb/memberlist) or from a running
 * speaker's memberlist view.
 */
import { LAN_CONFIG, WAN_CONFIG, parseMemberlistConfigFile, type MemberlistConfig } from '../membership/config.ts';
import { GRATUITOUS_INTERVAL_MS, GRATUITOUS_WINDOW_MS } from '../arp/schedule.ts';
import { isSpeakerPod } from '../election/speakers.ts';
import type { ClusterState, Pod } from '../kube.ts';
import type { FindingId } from './types.ts';

/** MetalLB's fixed path of the memberlist config file (a ConfigMap mount). */
export const MEMBERLIST_CONFIG_PATH = '/etc/metallb/memberlist/config.json';

/** Longest `text` kept whole (the text output's lines stay within 200 characters with its label). */
const MAX_TEXT = 184;

/** metallb-ts's speaker resync debounce after a membership change, in ms (Speaker `debounceMs`). */
export const RESYNC_DEBOUNCE_MS = 20;

/** The memberlist configuration the speakers run with, as far as the snapshot tells. */
export interface MemberlistInForce {
  /** true: on; false: off (no failover); null: not known (no speaker pod in the state) — MetalLB's manifests assumed (on, LAN). */
  readonly enabled: boolean | null;
  /** `LAN` (DefaultLANConfig), `WAN` (--ml-wan-config) or `file` (a config file). */
  readonly profile: 'LAN' | 'WAN' | 'file';
  /** The timings; the LAN ones when `enabled` is false or null. */
  readonly config: MemberlistConfig;
  /** Where this comes from, one phrase: `speaker pod metallb-system/speaker-x: METALLB_ML_BIND_ADDR and METALLB_ML_LABELS set, no config file`. */
  readonly source: string;
}

type Container = { name?: string; args?: unknown; command?: unknown; env?: unknown; volumeMounts?: unknown };
type EnvVar = { name?: string; value?: string; valueFrom?: unknown };
type Mount = { name?: string; mountPath?: string; subPath?: string };
type Volume = { name?: string; configMap?: { name?: string; items?: Array<{ key?: string; path?: string }> } };

/** The value of flag `--name` in `args` (`--name=v`, `--name v`, `-name=v`), true for a bare flag; undefined when absent. */
function flagValue(args: readonly string[], name: string): string | true | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const m = /^--?([^=]+)(?:=(.*))?$/.exec(a);
    if (!m || m[1] !== name) continue;
    if (m[2] !== undefined) return m[2];
    const next = args[i + 1];
    return next !== undefined && !next.startsWith('-') ? next : true;
  }
  return undefined;
}

/** The speaker container of a pod: the one named `speaker`, else the first. */
function speakerContainer(pod: Pod): Container | undefined {
  const containers = ((pod.spec as { containers?: Container[] } | undefined)?.containers ?? []).filter((c) => c && typeof c === 'object');
  return containers.find((c) => c.name === 'speaker') ?? containers[0];
}

/**
 * The memberlist configuration of the speakers, from `speakersSource` (a running speaker's
 * memberlist view says on or off) and the first speaker pod of MetalLB's namespace (any namespace
 * when none there): memberlist is on when both `--ml-bindaddr` / METALLB_ML_BIND_ADDR and
 * `--ml-labels` / METALLB_ML_LABELS are set (a `valueFrom` counts as set), as MetalLB's
 * speakerlist.New decides; `--ml-wan-config` picks the WAN timings; a ConfigMap mounted at
 * /etc/metallb/memberlist with a `config.json` key (or metallb-ts's `--ml-config-path`) replaces
 * them. A config file the speakers would refuse is reported in `source`, the defaults kept.
 */
export function memberlistInForce(state: Pick<ClusterState, 'pods' | 'configMaps'>, namespace: string, speakersSource?: string): MemberlistInForce {
  // Cached per pods list: explain runs once per Service (whois, whatif).
  const key = `${namespace}\u0000${speakersSource ?? ''}`;
  let perState = inForceCache.get(state.pods);
  const hit = perState?.get(key);
  if (hit && hit.configMaps === state.configMaps) return hit.value;
  const value = memberlistInForceUncached(state, namespace, speakersSource);
  if (!perState) inForceCache.set(state.pods, (perState = new Map()));
  perState.set(key, { configMaps: state.configMaps, value });
  return value;
}

const inForceCache = new WeakMap<readonly unknown[], Map<string, { configMaps: readonly unknown[]; value: MemberlistInForce }>>();

function memberlistInForceUncached(state: Pick<ClusterState, 'pods' | 'configMaps'>, namespace: string, speakersSource?: string): MemberlistInForce {
  const pods = state.pods.filter(isSpeakerPod);
  const pod = pods.find((p) => p.metadata?.namespace === namespace) ?? pods[0];
  const running = speakersSource === 'memberlist' ? true : speakersSource === 'memberlist-disabled' ? false : null;
  if (!pod) {
    if (running !== null) {
      return { enabled: running, profile: 'LAN', config: LAN_CONFIG, source: `a running speaker's memberlist view (timings not known: memberlist's LAN defaults assumed)` };
    }
    return { enabled: null, profile: 'LAN', config: LAN_CONFIG, source: "no speaker pod in the state: MetalLB's manifests assumed (memberlist on, LAN defaults)" };
  }
  const podName = `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
  const c = speakerContainer(pod);
  const args = [...(Array.isArray(c?.command) ? c.command : []), ...(Array.isArray(c?.args) ? c.args : [])].filter((a): a is string => typeof a === 'string');
  if (args.length === 0 && !(Array.isArray(c?.env) && c.env.length > 0)) {
    // A pod written without its container spec (a trimmed dump): it says nothing about memberlist.
    return {
      enabled: running,
      profile: 'LAN',
      config: LAN_CONFIG,
      source: `speaker pod ${podName} shows no flags or environment: ${running === null ? "MetalLB's manifests assumed (memberlist on, LAN defaults)" : "memberlist's LAN defaults assumed"}`,
    };
  }
  const env = new Map<string, EnvVar>();
  for (const e of (Array.isArray(c?.env) ? c.env : []) as EnvVar[]) if (e?.name) env.set(e.name, e);
  const set = (flag: string, envName: string): string | null => {
    const v = flagValue(args, flag);
    if (typeof v === 'string' && v !== '') return `--${flag}`;
    const e = env.get(envName);
    if (e && ((e.value ?? '') !== '' || e.valueFrom)) return envName;
    return null;
  };
  const bind = set('ml-bindaddr', 'METALLB_ML_BIND_ADDR');
  const labels = set('ml-labels', 'METALLB_ML_LABELS');
  const enabledByPod = bind !== null && labels !== null;
  const enabled = running ?? enabledByPod;
  const wanFlag = flagValue(args, 'ml-wan-config');
  const wan = wanFlag === true || wanFlag === 'true';
  if (!enabled) {
    const missing = [bind === null ? '--ml-bindaddr / METALLB_ML_BIND_ADDR' : null, labels === null ? '--ml-labels / METALLB_ML_LABELS' : null].filter(Boolean).join(' and ');
    return { enabled: false, profile: 'LAN', config: LAN_CONFIG, source: running === false ? 'a running speaker reports memberlist disabled' : `speaker pod ${podName} has no ${missing}` };
  }
  const base = wan ? WAN_CONFIG : LAN_CONFIG;
  const profile = wan ? 'WAN' : 'LAN';
  const how = running ? "a running speaker's memberlist view" : `speaker pod ${podName}: ${bind} and ${labels} set`;
  const file = configFileOf(pod, c, args, state.configMaps);
  if (!file) return { enabled: true, profile, config: base, source: `${how}, no config file: memberlist's ${profile} defaults` };
  try {
    const parsed = parseMemberlistConfigFile(file.text, file.where);
    return { enabled: true, profile: 'file', config: parsed.config, source: `${how}, config file ${file.where}` };
  } catch (err) {
    return { enabled: true, profile, config: base, source: `${how}; the config file ${file.where} is invalid (${(err as Error).message}): the speakers do not start with it; ${profile} defaults shown` };
  }
}

/** The memberlist config file a speaker pod mounts (ConfigMap at MetalLB's path or at `--ml-config-path`), or null. */
function configFileOf(pod: Pod, c: Container | undefined, args: readonly string[], configMaps: ClusterState['configMaps']): { text: string; where: string } | null {
  const custom = flagValue(args, 'ml-config-path');
  const path = typeof custom === 'string' && custom !== '' ? custom : MEMBERLIST_CONFIG_PATH;
  const slash = path.lastIndexOf('/');
  const dir = path.slice(0, slash);
  const fileName = path.slice(slash + 1);
  const mounts = (Array.isArray(c?.volumeMounts) ? c.volumeMounts : []) as Mount[];
  const volumes = (pod.spec as { volumes?: Volume[] } | undefined)?.volumes ?? [];
  for (const m of mounts) {
    let key: string | undefined;
    const v = volumes.find((x) => x?.name === m?.name);
    const cm = v?.configMap;
    if (!cm?.name) continue;
    if (m.mountPath === path && m.subPath) key = m.subPath;
    else if (m.mountPath === dir || m.mountPath === `${dir}/`) {
      const item = (cm.items ?? []).find((i) => i?.path === fileName);
      key = cm.items && cm.items.length > 0 ? item?.key : fileName;
    }
    if (!key) continue;
    const ns = pod.metadata?.namespace;
    const obj = configMaps.find((x) => x.metadata?.name === cm.name && (!ns || !x.metadata?.namespace || x.metadata.namespace === ns));
    const text = (obj as { data?: Record<string, string> } | undefined)?.data?.[key];
    if (typeof text === 'string') return { text, where: `ConfigMap ${ns ? `${ns}/` : ''}${cm.name} key ${key}` };
  }
  return null;
}

/** A range of milliseconds. */
export interface MsRange {
  readonly minMs: number;
  readonly maxMs: number;
}

/** What explain reports (`failover` in `explain -o json`). */
export interface FailoverBudget {
  /** The node announcing now, and the next in the hash order (null: no other candidate). */
  readonly announcer: string;
  readonly next: string | null;
  readonly memberlist: MemberlistInForce;
  /** Memberlist members counted (live speakers; every Node when not known). */
  readonly members: number;
  /** null when memberlist is off: no failover. */
  readonly detection: MsRange | null;
  readonly suspicion: (MsRange & { readonly confirmations: number }) | null;
  readonly gossipMs: number | null;
  readonly reactionMs: number | null;
  /** Gratuitous ARP / unsolicited NA: at once, then every `intervalMs` until `windowMs`. */
  readonly gratuitous: { readonly intervalMs: number; readonly windowMs: number };
  /** Death to the first gratuitous announcement from `next`; null when never. */
  readonly total: MsRange | null;
  /** One line for the text output. */
  readonly text: string;
}

/**
 * memberlist's suspicion timeouts for `n` members: min = suspicionMult × max(1, log10(max(1, n)))
 * × probeInterval (Go's Duration arithmetic: the scale kept to 1/1000), max = suspicionMaxTimeoutMult
 * × min, and the confirmations k that bring the timer from max down to min (suspicionMult − 2, or 0
 * when n − 2 < that: the timer is min from the start).
 */
export function suspicionBounds(config: Pick<MemberlistConfig, 'suspicionMult' | 'suspicionMaxTimeoutMult' | 'probeIntervalMs'>, n: number): MsRange & { confirmations: number } {
  const scale = Math.max(1, Math.log10(Math.max(1, n)));
  const minMs = Math.floor((config.suspicionMult * Math.floor(scale * 1000) * config.probeIntervalMs) / 1000);
  let k = config.suspicionMult - 2;
  if (n - 2 < k) k = 0;
  return { minMs, maxMs: k === 0 ? minMs : config.suspicionMaxTimeoutMult * minMs, confirmations: k };
}

/** `4 s`, `1.5 s`, `200 ms`. */
function secs(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1).replace(/\.0$/, '')} s`;
}

function range(r: MsRange): string {
  if (r.minMs === r.maxMs) return secs(r.minMs);
  if (r.minMs >= 1000) return `${secs(r.minMs).slice(0, -2)}–${secs(r.maxMs)}`;
  return `${secs(r.minMs)}–${secs(r.maxMs)}`;
}

/**
 * The failover budget for a Service announced in Layer 2 by `announcer`, `next` being the second
 * node of the hash order (null: the announcer is the only candidate, and the text says that nobody
 * takes over), with `members` memberlist members. Pure arithmetic on the
 * configuration (see module doc); never throws.
 */
export function failoverBudget(input: { readonly announcer: string; readonly next: string | null; readonly memberlist: MemberlistInForce; readonly members: number }): FailoverBudget {
  const { announcer, next, memberlist: ml, members } = input;
  const gratuitous = { intervalMs: GRATUITOUS_INTERVAL_MS, windowMs: GRATUITOUS_WINDOW_MS };
  // No failure detection at all: nobody takes over a dead announcer (why: `cause`).
  const never = (cause: string): FailoverBudget => ({
    announcer,
    next,
    memberlist: ml,
    members,
    detection: null,
    suspicion: null,
    gossipMs: null,
    reactionMs: null,
    gratuitous,
    total: null,
    text: `none: ${cause}: if ${announcer} dies, nobody takes over until its Node object is deleted`,
  });
  if (ml.enabled === false) return never('memberlist is off, every Node counts as alive');
  const c = ml.config;
  if (c.probeIntervalMs === 0) return never("memberlist's ProbeInterval is 0 (no failure detection)");
  const detection: MsRange = { minMs: c.probeIntervalMs, maxMs: 2 * c.probeIntervalMs };
  const suspicion = suspicionBounds(c, members);
  const gossipMs = c.gossipIntervalMs;
  const reactionMs = RESYNC_DEBOUNCE_MS;
  const total: MsRange = {
    minMs: detection.minMs + suspicion.minMs + reactionMs,
    maxMs: detection.maxMs + suspicion.maxMs + gossipMs + reactionMs,
  };
  const assumed = ml.enabled === null ? ', assumed' : '';
  const count = `${members} member${members === 1 ? '' : 's'}`;
  const susp = suspicion.confirmations === 0 ? `${secs(suspicion.minMs)} (${count})` : `${range(suspicion)} (${secs(suspicion.minMs)} if ${suspicion.confirmations} confirm; ${count})`;
  const config = ` (memberlist ${ml.profile}${assumed}: probe ${secs(c.probeIntervalMs)}/${secs(c.probeTimeoutMs)})`;
  if (next === null) {
    // The announcer is the only candidate: its death is detected, but nobody is there to take over.
    const alone = [
      `nobody takes over: ${announcer} is the only candidate, so if it dies the address stays dark until another node becomes one (its death is known after ${range({ minMs: detection.minMs + suspicion.minMs, maxMs: detection.maxMs + suspicion.maxMs + gossipMs })})`,
      `nobody takes over: ${announcer} is the only candidate, so if it dies the address stays dark until another node becomes one`,
      'nobody takes over: the announcer is the only candidate, so if it dies the address stays dark until another node becomes one',
    ];
    const text = alone.find((v) => v.length <= MAX_TEXT) ?? alone[alone.length - 1]!;
    return { announcer, next, memberlist: ml, members, detection, suspicion, gossipMs, reactionMs, gratuitous, total, text };
  }
  const who = next;
  // One line of the text output: the details go, least useful first, when node names make it long.
  const variants = [
    `${who} answers ${range(total)} after ${announcer} dies: detection ${range(detection)}, suspicion ${susp}, then gratuitous ARP/NDP${config}`,
    `${who} answers ${range(total)} after ${announcer} dies: detection ${range(detection)}, suspicion ${susp}, then gratuitous ARP/NDP`,
    `${who} answers ${range(total)} after ${announcer} dies: detection ${range(detection)}, suspicion ${range(suspicion)}, then gratuitous ARP/NDP`,
    `${who} answers ${range(total)} after the announcer dies: detection ${range(detection)}, suspicion ${range(suspicion)}, then gratuitous ARP/NDP`,
  ];
  const text = variants.find((v) => v.length <= MAX_TEXT) ?? variants[variants.length - 1]!;
  return { announcer, next, memberlist: ml, members, detection, suspicion, gossipMs, reactionMs, gratuitous, total, text };
}

/**
 * Finding `no-failover` (warning) when the budget says a dead announcer is never replaced
 * (memberlist disabled, or ProbeInterval 0): the Service goes dark with its node.
 */
export function failoverFindings(b: FailoverBudget | null): Array<{ id: FindingId; severity: 'warning'; message: string; fix: string }> {
  if (!b || b.total !== null) return [];
  return [
    {
      id: 'no-failover',
      severity: 'warning',
      message: `no failover: ${b.text.replace(/^none: /, '').replace(', every Node counts as alive', '')}`,
      fix:
        b.memberlist.enabled === false
          ? `${b.memberlist.source}: run the speakers with memberlist: --ml-bindaddr (METALLB_ML_BIND_ADDR from the pod IP, fieldRef status.podIP) and --ml-labels (METALLB_ML_LABELS, the speaker pods' labels), as MetalLB's manifests do`
          : "give the memberlist config file a ProbeInterval above 0 (memberlist's LAN default is 1s)",
    },
  ];
}
