/**
 * A running speaker's memberlist view, for `explain`/`whois` (live speakers of the election) and
 * `metallb-ts members`: the body of the speaker's `GET /debug/members`, how it maps to the election's
 * live speakers, and finding a speaker to ask through the API server's pod proxy
 * (`/api/v1/namespaces/NS/pods/NAME:PORT/proxy/debug/members`), which works from wherever
 * `kubectl` works.
 *
 * Light on purpose: no static import of the Kubernetes client (the caller passes its GET), so
 * `members` and the unit tests load it without client-node.
 */
import { EXIT_UNREACHABLE, UserError } from '../core/errors.ts';
import type { Pod } from '../core/kube.ts';

/** One member as the speaker reports it. */
export interface MemberRow {
  name: string;
  address: string;
  port: number;
  state: 'alive' | 'suspect' | 'dead' | 'left';
  incarnation: number;
}

/** The body of `/debug/members`: memberlist on (`self`, `members`) or off (`memberlist: false`, `alive`). */
export type MembersView = { self: string; members: MemberRow[] } | { memberlist: false; alive: string[] };

/** The default `--speaker-selector`: MetalLB's speaker pods (`app=metallb,component=speaker`) and ours (`app=metallb-ts,component=speaker`). */
export const DEFAULT_SPEAKER_SELECTOR = 'component=speaker';

/** MetalLB's speaker `--port` default (its manifests name the container port `monitoring`). */
export const METALLB_METRICS_PORT = 7472;

/** metallb-ts's speaker `--port` default (deploy/speaker.yaml). */
export const METALLB_TS_METRICS_PORT = 9120;

/** How long one speaker gets to answer during discovery, in milliseconds. */
export const DISCOVERY_TIMEOUT_MS = 2000;

/** How many speaker pods discovery asks before giving up. */
export const DISCOVERY_MAX_PODS = 3;

/** Whether `v` has the shape of a `/debug/members` body. */
export function isMembersView(v: unknown): v is MembersView {
  if (v === null || typeof v !== 'object') return false;
  const o = v as Record<string, unknown>;
  if (Array.isArray(o.members)) {
    return typeof o.self === 'string' && o.members.every((m) => m !== null && typeof m === 'object'
      && typeof (m as MemberRow).name === 'string' && typeof (m as MemberRow).state === 'string');
  }
  return o.memberlist === false && Array.isArray(o.alive) && o.alive.every((n) => typeof n === 'string');
}

/**
 * The election's live speakers according to a speaker's view, exactly as that speaker computes its
 * own election input (`Membership.alive()`): with memberlist on, the members memberlist's
 * `Members()` returns — state alive or suspect (src/core/membership/swim.ts liveMembers), dead and
 * left ones excluded — by name, sorted, unique; with memberlist off, null: every Node counts
 * (MetalLB's speaker with memberlist disabled; the `alive` list the speaker prints is just its Node
 * list at that moment, not a filter). Pure.
 */
export function speakersFromView(view: MembersView): string[] | null {
  if (!('members' in view)) return null;
  const names = new Set(view.members.filter((m) => m.state === 'alive' || m.state === 'suspect').map((m) => m.name));
  return [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The `--speaker` value as a URL base; throws UserError (exit 2) when it is not HOST:PORT. */
export function speakerURL(arg: string): string {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s/[\]]+):(\d{1,5})$/.exec(arg.trim());
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) throw new UserError(`invalid --speaker "${arg}": expected HOST:PORT (the speaker's metrics address)`);
  return `http://${m[1]}:${m[2]}`;
}

interface ContainerLike {
  args?: unknown;
  command?: unknown;
  ports?: Array<{ name?: string; containerPort?: number; protocol?: string }>;
}

function containers(pod: Pod): ContainerLike[] {
  const c = (pod.spec as { containers?: unknown } | undefined)?.containers;
  return Array.isArray(c) ? c as ContainerLike[] : [];
}

/**
 * The port a speaker pod serves `/debug/members` (its metrics port) on: the container port named
 * `monitoring` (MetalLB's manifests and deploy/speaker.yaml), else a `--port=N` / `--port N`
 * argument of a container, else the default of the implementation: 9120 when a container runs
 * `speaker` as its first argument (metallb-ts's image) or the pod is labelled `app=metallb-ts`,
 * else MetalLB's 7472. Pure.
 */
export function speakerMetricsPort(pod: Pod): number {
  for (const c of containers(pod)) {
    const p = (c.ports ?? []).find((x) => x?.name === 'monitoring' && (x.protocol ?? 'TCP') === 'TCP' && Number.isInteger(x.containerPort));
    if (p) return p.containerPort!;
  }
  let ours = pod.metadata?.labels?.['app'] === 'metallb-ts';
  for (const c of containers(pod)) {
    const args = [...(Array.isArray(c.command) ? c.command : []), ...(Array.isArray(c.args) ? c.args : [])].map(String);
    if (Array.isArray(c.args) && c.args[0] === 'speaker') ours = true;
    for (let i = 0; i < args.length; i++) {
      const m = /^--?port(?:=(\d+))?$/.exec(args[i]!);
      if (!m) continue;
      const v = m[1] ?? args[i + 1];
      if (v !== undefined && /^\d+$/.test(v) && Number(v) > 0 && Number(v) < 65536) return Number(v);
    }
  }
  return ours ? METALLB_TS_METRICS_PORT : METALLB_METRICS_PORT;
}

function isReady(pod: Pod): boolean {
  return (pod.status?.conditions ?? []).some((c) => c?.type === 'Ready' && c.status === 'True');
}

/** `namespace/name` of a pod. */
export function podRef(pod: Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

/**
 * The speaker pods discovery asks, in order: phase Running, not being deleted, with a pod IP (the
 * API server proxies to it), on `node` when given; Ready ones first, then by node name and pod
 * name. Pure.
 */
export function speakerCandidates(pods: readonly Pod[], node?: string): Pod[] {
  const key = (p: Pod) => `${isReady(p) ? 0 : 1}\u0000${p.spec?.nodeName ?? '\uffff'}\u0000${p.metadata?.name ?? ''}`;
  return pods
    .filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp && !!p.status?.podIP && (node === undefined || p.spec?.nodeName === node))
    .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** Where a speaker view came from. */
export interface SpeakerViewOrigin {
  /** `address`: `--speaker HOST:PORT` directly; `pod-proxy`: a speaker pod through the API server's pod proxy */
  via: 'address' | 'pod-proxy';
  /** HOST:PORT asked (`--speaker`), or the pod's IP and metrics port */
  address: string;
  /** the speaker pod (`namespace/name`), null for `--speaker` */
  pod: string | null;
  /** the node of that speaker: the pod's node, else the member name the speaker reports as itself (memberlist on), else null */
  node: string | null;
}

/** A speaker's view and where it came from. */
export interface SpeakerViewFound {
  view: MembersView;
  from: SpeakerViewOrigin;
}

/** Outcome of discovery: a view, or why there is none (one line, `no speaker reachable: ...`). */
export type DiscoveryResult = ({ ok: true } & SpeakerViewFound) | { ok: false; reason: string };

/** A GET on the API server returning parsed JSON (kubeGet bound to a kubeconfig); throws on non-2xx and socket errors. */
export type ApiGet = (path: string, opts: { query?: Record<string, string>; timeoutMs?: number }) => Promise<unknown>;

/** Options of discoverSpeakerView. */
export interface DiscoveryOptions {
  /** MetalLB's namespace, where the speaker pods run */
  namespace: string;
  /** label selector of the speaker pods (DEFAULT_SPEAKER_SELECTOR) */
  selector?: string;
  /** only the speaker pod on this node */
  node?: string;
  /** per-pod timeout in milliseconds (DISCOVERY_TIMEOUT_MS) */
  timeoutMs?: number;
  /** how many pods to try (DISCOVERY_MAX_PODS) */
  maxPods?: number;
  /** called once per pod still not answering after `slowMs` (default 1000 ms): progress for stderr */
  onSlow?: (message: string) => void;
  slowMs?: number;
}

/**
 * One line for a failed request: the API server's status and message (`HTTP 503: error trying to
 * reach service: dial tcp ...`), the socket error code, or `no answer within N ms`. Pure.
 */
export function failureReason(err: unknown, timeoutMs?: number): string {
  const e = err as { statusCode?: unknown; message?: unknown; code?: unknown; name?: unknown; cause?: { code?: unknown } } | null;
  const oneLine = (s: unknown) => String(s ?? '').split('\n').map((x) => x.trim()).filter(Boolean).join(' ').slice(0, 300);
  if (e && typeof e.statusCode === 'number') {
    const msg = oneLine(e.message);
    const hint = e.statusCode === 403 ? ' (reading a speaker through the API server needs get on pods/proxy)' : '';
    return `HTTP ${e.statusCode}${msg && msg !== `HTTP ${e.statusCode}` ? `: ${msg}` : ''}${hint}`;
  }
  if (e && (e.code === 'ETIMEDOUT' || e.name === 'TimeoutError')) return timeoutMs !== undefined ? `no answer within ${timeoutMs} ms` : 'timed out';
  if (e && typeof e.code === 'string') return e.code;
  if (e?.cause && typeof e.cause.code === 'string') return e.cause.code;
  return oneLine(e?.message ?? err);
}

/**
 * Finds a running speaker and reads its view through the API server's pod proxy: lists the pods
 * matching `selector` in `namespace`, takes speakerCandidates, and asks up to `maxPods` of them in
 * turn (`timeoutMs` each) for `/debug/members` on speakerMetricsPort. Never rejects for an
 * unreachable or silent speaker: `{ok: false, reason}` says why none answered (`no speaker
 * reachable: no Running speaker pod matches component=speaker in metallb-system`, or each pod tried
 * with its error, e.g. a MetalLB speaker answering 404: it has no such endpoint).
 * @throws UserError (exit 2) when the API server rejects the selector (HTTP 400).
 */
export async function discoverSpeakerView(get: ApiGet, opts: DiscoveryOptions): Promise<DiscoveryResult> {
  const selector = opts.selector ?? DEFAULT_SPEAKER_SELECTOR;
  const timeoutMs = opts.timeoutMs ?? DISCOVERY_TIMEOUT_MS;
  const where = `${selector} in ${opts.namespace}${opts.node !== undefined ? ` on node ${opts.node}` : ''}`;
  let pods: Pod[];
  try {
    const list = await get(`/api/v1/namespaces/${encodeURIComponent(opts.namespace)}/pods`, { query: { labelSelector: selector }, timeoutMs: 10_000 }) as { items?: Pod[] };
    pods = (list.items ?? []).map((p) => ({ ...p, metadata: { ...p.metadata, namespace: p.metadata?.namespace ?? opts.namespace } }));
  } catch (err) {
    if ((err as { statusCode?: unknown }).statusCode === 400) throw new UserError(`invalid --speaker-selector "${selector}": ${failureReason(err)}`);
    return { ok: false, reason: `no speaker reachable: cannot list the speaker pods (${selector} in ${opts.namespace}): ${failureReason(err)}` };
  }
  const candidates = speakerCandidates(pods, opts.node);
  if (candidates.length === 0) {
    return { ok: false, reason: `no speaker reachable: no Running speaker pod matches ${where}` };
  }
  const failures: string[] = [];
  for (const pod of candidates.slice(0, opts.maxPods ?? DISCOVERY_MAX_PODS)) {
    const port = speakerMetricsPort(pod);
    const name = pod.metadata?.name ?? '';
    const node = pod.spec?.nodeName ?? null;
    const label = `pod ${podRef(pod)}${node ? ` (node ${node})` : ''} port ${port}`;
    const path = `/api/v1/namespaces/${encodeURIComponent(opts.namespace)}/pods/${encodeURIComponent(name)}:${port}/proxy/debug/members`;
    const slow = opts.onSlow ? setTimeout(() => opts.onSlow!(`asking speaker ${label} for its memberlist view through the API server...`), opts.slowMs ?? 1000) : undefined;
    try {
      const body = await get(path, { timeoutMs });
      if (!isMembersView(body)) {
        failures.push(`${label}: /debug/members did not answer a member view`);
        continue;
      }
      const ip = pod.status!.podIP!;
      return { ok: true, view: body, from: { via: 'pod-proxy', address: `${ip.includes(':') ? `[${ip}]` : ip}:${port}`, pod: podRef(pod), node: node ?? ('self' in body ? body.self : null) } };
    } catch (err) {
      if (err instanceof UserError && !(err as { statusCode?: unknown }).statusCode) throw err;
      failures.push(`${label}: ${failureReason(err, timeoutMs)}`);
    } finally {
      if (slow) clearTimeout(slow);
    }
  }
  const more = candidates.length > failures.length ? ` (${candidates.length - failures.length} more not tried)` : '';
  return { ok: false, reason: `no speaker reachable: ${failures.join('; ')}${more}` };
}

/**
 * Reads `/debug/members` from `speaker` (HOST:PORT) directly.
 * @throws UserError (exit 2) for a value that is not HOST:PORT; UserError with EXIT_UNREACHABLE
 *   (exit 3) naming the speaker when it cannot be reached, answers an error or no member view.
 */
export async function fetchMembers(speaker: string, timeoutMs = 5000): Promise<MembersView> {
  const base = speakerURL(speaker);
  let res: Response;
  try {
    res = await fetch(`${base}/debug/members`, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why = (err as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : cause?.code ?? cause?.message ?? (err as Error).message;
    throw new UserError(`cannot reach speaker ${speaker}: ${why}`, EXIT_UNREACHABLE);
  }
  if (!res.ok) throw new UserError(`speaker ${speaker}: GET /debug/members answered ${res.status}`, EXIT_UNREACHABLE);
  try {
    const v: unknown = await res.json();
    if (isMembersView(v)) return v;
  } catch {
    // falls through
  }
  throw new UserError(`speaker ${speaker}: GET /debug/members did not answer a member view`, EXIT_UNREACHABLE);
}
