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
import { isIPv4, isIPv6 } from 'node:net';
import { EXIT_UNREACHABLE, UserError } from '../core/errors.ts';
import type { Pod } from '../core/kube.ts';
import { escapeControl } from '../core/text.ts';
import { RESPONSE_TOO_LARGE, TIMED_OUT, timeoutError, tooLargeError } from './http-limits.ts';

// node:http through getBuiltinModule, not `import`: the ESM facade of node:http reads every export,
// which loads undici (about 100 ms of CPU at each start); the module itself is the same.
const http = process.getBuiltinModule('node:http');

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

/**
 * The speaker `--port` default, MetalLB v0.16.1's (`speaker/main.go`: 9120, where it serves its
 * metrics over HTTPS) and metallb-ts's (deploy/speaker.yaml; plain HTTP, with `/debug/members`).
 */
export const DEFAULT_SPEAKER_PORT = 9120;

/** How long one speaker gets to answer during discovery, in milliseconds: an absolute deadline per pod. */
export const DISCOVERY_TIMEOUT_MS = 2000;

/** How long `--speaker HOST:PORT` gets to answer, in milliseconds: an absolute deadline. */
export const SPEAKER_TIMEOUT_MS = 5000;

/** The largest `/debug/members` body read, in bytes (1 MiB: a few thousand members). */
export const MAX_VIEW_BYTES = 1024 * 1024;

/** How many speaker pods discovery asks before giving up. */
export const DISCOVERY_MAX_PODS = 3;

const STATES = new Set(['alive', 'suspect', 'dead', 'left']);
const isUint = (x: unknown, max = Number.MAX_SAFE_INTEGER) => typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= max;

/**
 * What keeps `v` from being a `/debug/members` body, in a few words naming the field
 * (`members[3].address is not a string`), or null when it is one: `{self: string, members: [{name:
 * string, address: string, port: 0..65535, state: alive|suspect|dead|left, incarnation: integer >=
 * 0}]}` or `{memberlist: false, alive: string[]}`. Pure.
 */
export function membersViewProblem(v: unknown): string | null {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'not a JSON object';
  const o = v as Record<string, unknown>;
  if ('members' in o) {
    if (typeof o.self !== 'string') return 'self is not a string';
    if (!Array.isArray(o.members)) return 'members is not a list';
    for (let i = 0; i < o.members.length; i++) {
      const m = o.members[i] as Record<string, unknown> | null;
      const at = `members[${i}]`;
      if (m === null || typeof m !== 'object' || Array.isArray(m)) return `${at} is not an object`;
      if (typeof m.name !== 'string') return `${at}.name is not a string`;
      if (typeof m.address !== 'string') return `${at}.address is not a string`;
      if (!isUint(m.port, 65535)) return `${at}.port is not a port number`;
      if (typeof m.state !== 'string' || !STATES.has(m.state)) return `${at}.state is not alive, suspect, dead or left`;
      if (!isUint(m.incarnation)) return `${at}.incarnation is not a non-negative integer`;
    }
    return null;
  }
  if (o.memberlist !== false) return 'neither members nor memberlist: false';
  if (!Array.isArray(o.alive)) return 'alive is not a list';
  const bad = o.alive.findIndex((n) => typeof n !== 'string');
  return bad >= 0 ? `alive[${bad}] is not a string` : null;
}

/** Whether `v` has the shape of a `/debug/members` body (membersViewProblem finds nothing). Pure. */
export function isMembersView(v: unknown): v is MembersView {
  return membersViewProblem(v) === null;
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

/** A parsed `--speaker`: `host` without brackets (IPv4, IPv6 or a DNS name), `port` 1..65535. */
export interface SpeakerAddress {
  host: string;
  port: number;
}

const DNS_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/**
 * Parses `--speaker HOST:PORT` (surrounding blanks ignored): HOST an IPv4 literal, a bracketed
 * IPv6 literal (`[fd00::1]`, no zone) or a DNS name (labels of letters, digits and inner `-`,
 * dot-separated, an optional final dot; one ending in a numeric label must be an IPv4 literal),
 * PORT 1..65535. Pure.
 * @throws UserError (exit 2) for anything else (`127.0.0.1#:18011`, `a@host:1`, `host?:1`, `host:0`).
 */
export function parseSpeakerAddress(arg: string): SpeakerAddress {
  const bad = () => new UserError(`invalid --speaker "${arg}": expected HOST:PORT (the speaker's metrics address: an IPv4 address, [IPv6] or a DNS name, and a port 1-65535)`);
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):([0-9]{1,5})$/.exec(arg.trim());
  if (!m) throw bad();
  const port = Number(m[3]);
  if (port < 1 || port > 65535) throw bad();
  if (m[1] !== undefined) {
    if (!isIPv6(m[1])) throw bad();
    return { host: m[1], port };
  }
  const host = m[2]!;
  if (isIPv4(host)) return { host, port };
  const labels = (host.endsWith('.') ? host.slice(0, -1) : host).split('.');
  if (host.length > 254 || !labels.every((l) => DNS_LABEL.test(l))) throw bad();
  // `1.2.3`, `999.1.1.1`, `0x7f.1`: what resolvers read as an IPv4 address, but not a valid literal.
  if (/^(?:[0-9]+|0[xX][0-9A-Fa-f]*)$/.test(labels[labels.length - 1]!)) throw bad();
  return { host, port };
}

/** The `--speaker` value as a URL base (`http://10.0.0.5:9120`, `http://[::1]:9120`); throws as parseSpeakerAddress. */
export function speakerURL(arg: string): string {
  const { host, port } = parseSpeakerAddress(arg);
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

interface ContainerLike {
  image?: unknown;
  args?: unknown;
  command?: unknown;
  ports?: Array<{ name?: string; containerPort?: number; protocol?: string }>;
}

function containers(pod: Pod): ContainerLike[] {
  const c = (pod.spec as { containers?: unknown } | undefined)?.containers;
  return Array.isArray(c) ? (c as ContainerLike[]) : [];
}

/**
 * The port a speaker pod serves `/debug/members` (its metrics port) on: the container port named
 * `monitoring` (deploy/speaker.yaml), else a `--port=N` / `--port N` argument of a container, else
 * DEFAULT_SPEAKER_PORT (9120, the `--port` default of MetalLB's speaker and ours). Pure.
 */
export function speakerMetricsPort(pod: Pod): number {
  for (const c of containers(pod)) {
    const p = (c.ports ?? []).find((x) => x?.name === 'monitoring' && (x.protocol ?? 'TCP') === 'TCP' && Number.isInteger(x.containerPort));
    if (p) return p.containerPort!;
  }
  for (const c of containers(pod)) {
    const args = [...(Array.isArray(c.command) ? c.command : []), ...(Array.isArray(c.args) ? c.args : [])].map(String);
    for (let i = 0; i < args.length; i++) {
      const m = /^--?port(?:=(\d+))?$/.exec(args[i]!);
      if (!m) continue;
      const v = m[1] ?? args[i + 1];
      if (v !== undefined && /^\d+$/.test(v) && Number(v) > 0 && Number(v) < 65536) return Number(v);
    }
  }
  return DEFAULT_SPEAKER_PORT;
}

/**
 * Whether `pod` runs MetalLB's own speaker, which serves its metrics over HTTPS only and has no
 * `/debug/members`: a container port named `metricshttps` (MetalLB's manifests) or a container
 * image `…metallb/speaker[:tag|@digest]` (`quay.io/metallb/speaker:v0.16.1`). Pure.
 */
export function isMetalLBSpeaker(pod: Pod): boolean {
  return containers(pod).some((c) => (c.ports ?? []).some((p) => p?.name === 'metricshttps') || (typeof c.image === 'string' && /(?:^|\/)metallb\/speaker(?:[:@]|$)/.test(c.image)));
}

/** The fallback reason for a MetalLB speaker pod (isMetalLBSpeaker, or one answering "HTTP request to an HTTPS server"). */
export const METALLB_SPEAKER_REASON = 'a MetalLB speaker serves no memberlist view';

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

/**
 * A GET on the API server returning parsed JSON (kubeGet bound to a kubeconfig): `timeoutMs` idle
 * timeout, `deadlineMs` absolute deadline, both in milliseconds; `maxBytes` the largest answer.
 * Rejects on non-2xx (an error with `statusCode`), socket errors, `no answer within N ms` (code
 * ETIMEDOUT) and `answer larger than N bytes` (code ERESPONSETOOLARGE).
 */
export type ApiGet = (path: string, opts: { query?: Record<string, string>; timeoutMs?: number; deadlineMs?: number; maxBytes?: number; signal?: AbortSignal }) => Promise<unknown>;

/** Options of discoverSpeakerView. */
export interface DiscoveryOptions {
  /** MetalLB's namespace, where the speaker pods run */
  namespace: string;
  /** label selector of the speaker pods (absent: DEFAULT_SPEAKER_SELECTOR, named "the default speaker selector" in errors) */
  selector?: string;
  /** only the speaker pod on this node */
  node?: string;
  /** per-pod absolute deadline in milliseconds (DISCOVERY_TIMEOUT_MS) */
  timeoutMs?: number;
  /** largest `/debug/members` answer in bytes (MAX_VIEW_BYTES) */
  maxBytes?: number;
  /** how many pods to try (DISCOVERY_MAX_PODS) */
  maxPods?: number;
  /** called once per pod still not answering after `slowMs` (default 1000 ms): progress for stderr */
  onSlow?: (message: string) => void;
  slowMs?: number;
  /** stops discovery (passed to every request) */
  signal?: AbortSignal;
}

/**
 * One line for a failed request, control characters escaped (escapeControl): the API server's
 * status and message (`HTTP 503: error trying to reach service: dial tcp ...`), `no answer within
 * N ms` (`timeoutMs`, else the error's own message), `answer larger than N bytes`, or the socket
 * error code. Pure.
 */
export function failureReason(err: unknown, timeoutMs?: number): string {
  const e = err as { statusCode?: unknown; message?: unknown; code?: unknown; name?: unknown; cause?: { code?: unknown } } | null;
  const oneLine = (s: unknown) =>
    escapeControl(
      String(s ?? '')
        .split('\n')
        .map((x) => x.trim())
        .filter(Boolean)
        .join(' ')
        .slice(0, 300),
    );
  if (e && typeof e.statusCode === 'number') {
    const msg = oneLine(e.message);
    const hint = e.statusCode === 403 ? ' (reading a speaker through the API server needs get on pods/proxy)' : '';
    return `HTTP ${e.statusCode}${msg && msg !== `HTTP ${e.statusCode}` ? `: ${msg}` : ''}${hint}`;
  }
  if (e && (e.code === TIMED_OUT || e.name === 'TimeoutError')) {
    if (timeoutMs !== undefined) return `no answer within ${timeoutMs} ms`;
    return typeof e.message === 'string' && /^no answer within \d+ ms$/.test(e.message) ? e.message : 'timed out';
  }
  if (e && e.code === RESPONSE_TOO_LARGE) return oneLine(e.message);
  if (e && typeof e.code === 'string') return e.code;
  if (e?.cause && typeof e.cause.code === 'string') return e.cause.code;
  return oneLine(e?.message ?? err);
}

/** One pod discovery gave up on. */
interface PodFailure {
  pod: string;
  node: string | null;
  /** the port asked; null when the pod was not asked (a MetalLB speaker) */
  port: number | null;
  reason: string;
}

/**
 * Failures as one line, pods with the same reason together, in the order first seen:
 * `pod ns/a (node n1) port 9120: HTTP 404: not found; pods ns/b (node n2), ns/c (node n3) port
 * 9120: no answer within 2000 ms`. Pure.
 */
function failuresText(failures: readonly PodFailure[]): string {
  const byReason = new Map<string, PodFailure[]>();
  for (const f of failures) byReason.set(f.reason, [...(byReason.get(f.reason) ?? []), f]);
  return [...byReason]
    .map(([reason, fs]) => {
      const ports = new Set(fs.map((f) => f.port));
      const samePort = ports.size === 1;
      const one = (f: PodFailure, withPort: boolean) => `${f.pod}${f.node ? ` (node ${f.node})` : ''}${withPort && f.port !== null ? ` port ${f.port}` : ''}`;
      const pods = fs.map((f) => one(f, !samePort)).join(', ');
      const port = samePort && fs[0]!.port !== null ? ` port ${fs[0]!.port}` : '';
      return `${fs.length === 1 ? 'pod' : 'pods'} ${pods}${port}: ${reason}`;
    })
    .join('; ');
}

/**
 * Finds a running speaker and reads its view through the API server's pod proxy: lists the pods
 * matching `selector` in `namespace`, takes speakerCandidates, and asks up to `maxPods` of them in
 * turn (`timeoutMs` each, an absolute deadline; at most `maxBytes`) for `/debug/members` on
 * speakerMetricsPort. A MetalLB speaker pod (isMetalLBSpeaker) is not asked: it has no such
 * endpoint. Never rejects for an unreachable or silent speaker: `{ok: false, reason}` says why none
 * answered (`no speaker reachable: no Running speaker pod matches component=speaker in
 * metallb-system`, or the pods tried grouped by error, e.g. `pods metallb-system/a (node n1),
 * metallb-system/b (node n2): a MetalLB speaker serves no memberlist view`).
 * @throws UserError (exit 2) when the API server rejects the selector (HTTP 400); a UserError the
 *   `get` throws for the pod list (the caller's own mapping, e.g. ClusterUnreachableError) as is;
 *   the signal's reason when `signal` aborts.
 */
export async function discoverSpeakerView(get: ApiGet, opts: DiscoveryOptions): Promise<DiscoveryResult> {
  const selector = opts.selector ?? DEFAULT_SPEAKER_SELECTOR;
  const timeoutMs = opts.timeoutMs ?? DISCOVERY_TIMEOUT_MS;
  const maxBytes = opts.maxBytes ?? MAX_VIEW_BYTES;
  const signal = opts.signal ? { signal: opts.signal } : {};
  const where = `${selector} in ${opts.namespace}${opts.node !== undefined ? ` on node ${opts.node}` : ''}`;
  let pods: Pod[];
  try {
    const list = (await get(`/api/v1/namespaces/${encodeURIComponent(opts.namespace)}/pods`, { query: { labelSelector: selector }, timeoutMs: 10_000, deadlineMs: 30_000, ...signal })) as { items?: Pod[] };
    pods = (list.items ?? []).map((p) => ({ ...p, metadata: { ...p.metadata, namespace: p.metadata?.namespace ?? opts.namespace } }));
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    if ((err as { statusCode?: unknown }).statusCode === 400) {
      const which = opts.selector !== undefined ? `invalid --speaker-selector "${selector}"` : `the API server rejected the default speaker selector "${selector}"`;
      throw new UserError(`${which}: ${failureReason(err)}`);
    }
    if (err instanceof UserError) throw err;
    return { ok: false, reason: `no speaker reachable: cannot list the speaker pods (${selector} in ${opts.namespace}): ${failureReason(err)}` };
  }
  const candidates = speakerCandidates(pods, opts.node);
  if (candidates.length === 0) {
    return { ok: false, reason: `no speaker reachable: no Running speaker pod matches ${where}` };
  }
  const failures: PodFailure[] = [];
  for (const pod of candidates.slice(0, opts.maxPods ?? DISCOVERY_MAX_PODS)) {
    const name = pod.metadata?.name ?? '';
    const node = pod.spec?.nodeName ?? null;
    if (isMetalLBSpeaker(pod)) {
      failures.push({ pod: podRef(pod), node, port: null, reason: METALLB_SPEAKER_REASON });
      continue;
    }
    const port = speakerMetricsPort(pod);
    const label = `pod ${podRef(pod)}${node ? ` (node ${node})` : ''} port ${port}`;
    const path = `/api/v1/namespaces/${encodeURIComponent(opts.namespace)}/pods/${encodeURIComponent(name)}:${port}/proxy/debug/members`;
    const slow = opts.onSlow ? setTimeout(() => opts.onSlow!(`asking speaker ${label} for its memberlist view through the API server...`), opts.slowMs ?? 1000) : undefined;
    const fail = (reason: string) => failures.push({ pod: podRef(pod), node, port, reason });
    try {
      const body = await get(path, { timeoutMs, deadlineMs: timeoutMs, maxBytes, ...signal });
      const problem = membersViewProblem(body);
      if (problem !== null) {
        fail(`/debug/members did not answer a member view (${problem})`);
        continue;
      }
      const view = body as MembersView;
      const ip = pod.status!.podIP!;
      return { ok: true, view, from: { via: 'pod-proxy', address: `${ip.includes(':') ? `[${ip}]` : ip}:${port}`, pod: podRef(pod), node: node ?? ('self' in view ? view.self : null) } };
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      if (err instanceof UserError && !(err as { statusCode?: unknown }).statusCode) throw err;
      const https = /HTTP request to an HTTPS server/i.test(String((err as { message?: unknown }).message ?? ''));
      fail(https ? `it serves HTTPS only: ${METALLB_SPEAKER_REASON}` : failureReason(err, timeoutMs));
    } finally {
      if (slow) clearTimeout(slow);
    }
  }
  const more = candidates.length > failures.length ? ` (${candidates.length - failures.length} more not tried)` : '';
  return { ok: false, reason: `no speaker reachable: ${failuresText(failures)}${more}` };
}

/** Options of fetchMembers. */
export interface FetchMembersOptions {
  /** absolute deadline in milliseconds (SPEAKER_TIMEOUT_MS) */
  timeoutMs?: number;
  /** largest answer in bytes (MAX_VIEW_BYTES) */
  maxBytes?: number;
  /** aborts the read: rejects with the signal's reason */
  signal?: AbortSignal;
}

/**
 * One plain-HTTP GET with an absolute deadline and a size cap; redirects are not followed (any
 * port 1..65535 may be asked, unlike fetch). Resolves to the status and the body.
 * @throws the socket's error; timeoutError / tooLargeError; the signal's reason.
 */
function boundedGet(addr: SpeakerAddress, path: string, o: Required<Omit<FetchMembersOptions, 'signal'>> & { signal?: AbortSignal }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (err: unknown, value?: { status: number; body: string }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      if (err !== undefined) {
        req.destroy();
        reject(err);
      } else {
        resolve(value!);
      }
    };
    const onAbort = () => finish(o.signal!.reason ?? Object.assign(new Error('aborted'), { name: 'AbortError' }));
    const timer = setTimeout(() => finish(timeoutError(o.timeoutMs)), o.timeoutMs);
    const req = http.request({ hostname: addr.host, port: addr.port, path, method: 'GET', agent: false, headers: { Accept: 'application/json', 'User-Agent': 'metallb-ts' } }, (res) => {
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > o.maxBytes) return finish(tooLargeError(o.maxBytes));
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > o.maxBytes) return finish(tooLargeError(o.maxBytes));
        chunks.push(c);
      });
      res.on('error', (err) => finish(err));
      res.on('end', () => finish(undefined, { status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', (err) => finish(err));
    if (o.signal?.aborted) onAbort();
    else o.signal?.addEventListener('abort', onAbort, { once: true });
    req.end();
  });
}

/**
 * Reads `/debug/members` from `speaker` (HOST:PORT, parseSpeakerAddress) directly over plain HTTP:
 * an absolute deadline of `timeoutMs` (default 5000 ms) for the whole answer, at most `maxBytes`
 * (default 1 MiB), redirects not followed.
 * @throws UserError (exit 2) for a value that is not HOST:PORT; UserError with EXIT_UNREACHABLE
 *   (exit 3), one line naming the speaker, when it cannot be reached (`cannot reach speaker H:P:
 *   ECONNREFUSED`, `… no answer within 5000 ms`), answers another status than 200 (a redirect
 *   included), more than `maxBytes`, or no member view (saying what is wrong, e.g.
 *   `members[3].address is not a string`); the signal's reason when `signal` aborts.
 */
export async function fetchMembers(speaker: string, opts: FetchMembersOptions = {}): Promise<MembersView> {
  const addr = parseSpeakerAddress(speaker);
  const timeoutMs = opts.timeoutMs ?? SPEAKER_TIMEOUT_MS;
  const maxBytes = opts.maxBytes ?? MAX_VIEW_BYTES;
  let got: { status: number; body: string };
  try {
    got = await boundedGet(addr, '/debug/members', { timeoutMs, maxBytes, ...(opts.signal ? { signal: opts.signal } : {}) });
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    const e = err as { code?: unknown; message?: unknown; errors?: Array<{ code?: unknown }> };
    if (e.code === RESPONSE_TOO_LARGE) throw new UserError(`speaker ${speaker}: GET /debug/members: ${String(e.message)}`, EXIT_UNREACHABLE);
    const why = e.code === TIMED_OUT ? String(e.message) : typeof e.code === 'string' ? e.code : typeof e.errors?.[0]?.code === 'string' ? e.errors[0].code : escapeControl(String(e.message ?? err));
    throw new UserError(`cannot reach speaker ${speaker}: ${why}`, EXIT_UNREACHABLE);
  }
  if (got.status < 200 || got.status >= 300) {
    const redirect = got.status >= 300 && got.status < 400 ? ' (a redirect: not followed)' : '';
    throw new UserError(`speaker ${speaker}: GET /debug/members answered ${got.status}${redirect}`, EXIT_UNREACHABLE);
  }
  let v: unknown;
  try {
    v = JSON.parse(got.body);
  } catch {
    throw new UserError(`speaker ${speaker}: GET /debug/members did not answer a member view (not JSON)`, EXIT_UNREACHABLE);
  }
  const problem = membersViewProblem(v);
  if (problem !== null) throw new UserError(`speaker ${speaker}: GET /debug/members did not answer a member view (${problem})`, EXIT_UNREACHABLE);
  return v as MembersView;
}
