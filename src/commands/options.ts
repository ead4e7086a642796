/**
 * Options shared by the commands, so every command spells them the same way:
 * `-f, --filename` (repeatable), `--kubeconfig`, `--context`, `--metallb-namespace`, `-n, --namespace`,
 * `-o, --output`, `--speakers`, `--ignore-exclude-lb`, the speaker-view options (`--speaker`,
 * `--speaker-selector`, `--no-speaker-discovery`), and the one place that turns them into a
 * ClusterState (the snapshot files of `-f`, or the live cluster without `-f`) and a list of live
 * speakers.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { ClusterState } from '../core/kube.ts';
import { UserError } from '../core/errors.ts';
import { rejectedConfig } from '../core/explain/rejected.ts';
import { diagnosticContext, type DiagnosticContext } from '../core/explain/context.ts';
import { loadSnapshot, STDIN_NAME } from '../kube/snapshot.ts';
import { DEFAULT_METALLB_NAMESPACE } from '../core/kube.ts';
import { OUTPUT_FORMATS, type OutputFormat } from '../render/output.ts';
import { DEFAULT_SPEAKER_SELECTOR, discoverSpeakerView, fetchMembers, parseSpeakerAddress, speakersFromView, type SpeakerViewOrigin } from '../kube/speaker-view.ts';
import type { KubeConfig } from '@kubernetes/client-node';

export { rejectedConfig } from '../core/explain/rejected.ts';

/** Parsed `--speaker`, `--speaker-selector` and `--no-speaker-discovery`. */
export interface SpeakerViewOptions {
  /** `--speaker HOST:PORT`: ask this speaker (its metrics address) for its memberlist view. */
  speaker?: string;
  /** `--speaker-selector`: label selector of the speaker pods discovery asks (default `component=speaker`). */
  speakerSelector?: string;
  /** false with `--no-speaker-discovery`: derive the live speakers from the state, ask no speaker. */
  speakerDiscovery?: boolean;
}

/** Parsed values of the state options (commander's camel-cased names). */
export interface StateOptions extends SpeakerViewOptions {
  /** `-f` paths in the order given; `-` is stdin. Absent: live cluster. */
  filename?: string[];
  /** `-n`; commands default it to `default` where a namespace is needed. */
  namespace?: string;
  /** `--speakers`: node names whose speaker memberlist considers alive. Absent: derived from state. */
  speakers?: string[];
  /** `--ignore-exclude-lb`: the speaker flag of the same name. */
  ignoreExcludeLb?: boolean;
  /** `--kubeconfig`: the kubeconfig file for live access (else KUBECONFIG, ~/.kube/config, in-cluster). */
  kubeconfig?: string;
  /** `--context`: the kubeconfig context for live access. */
  context?: string;
  /** `--metallb-namespace`: where MetalLB runs (its CRs, speaker pods); default metallb-system. */
  metallbNamespace?: string;
  /** `--lb-class`: MetalLB's loadBalancerClass; absent: only Services without a class. */
  lbClass?: string;
}

/** Where a ClusterState came from: the live API server, or snapshot files (`<stdin>` for `-f -`). */
export type StateSource = { kind: 'live'; server: string } | { kind: 'files'; files: string[] };

/** Parsed `-o`. */
export interface OutputOptions {
  output: OutputFormat;
}

/**
 * Adds `-f, --filename <path>` (repeatable) and the live-cluster options used without it:
 * `--kubeconfig <path>`, `--context <name>`, `--metallb-namespace <ns>`.
 */
export function addFilenameOption(cmd: Command): Command {
  return addClusterOptions(
    cmd.option(
      '-f, --filename <path>',
      'cluster snapshot: a YAML/JSON file, a directory of them, or - for stdin (repeatable); without it, the live cluster is read',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    ),
  );
}

/** Adds `--kubeconfig <path>`, `--context <name>` and `--metallb-namespace <ns>` (live cluster access). */
export function addClusterOptions(cmd: Command): Command {
  return cmd
    .option('--kubeconfig <path>', 'kubeconfig file for the live cluster (default: KUBECONFIG, ~/.kube/config, in-cluster service account)')
    .option('--context <name>', 'kubeconfig context to use (default: its current-context)')
    .option('--metallb-namespace <ns>', `namespace MetalLB runs in: its CRs, speaker pods, secrets (default "${DEFAULT_METALLB_NAMESPACE}")`);
}

/** Adds `-n, --namespace <ns>`. */
export function addNamespaceOption(cmd: Command, help = 'namespace of the service (default "default")'): Command {
  return cmd.option('-n, --namespace <ns>', help);
}

/** Adds `--speakers a,b,c` and `--ignore-exclude-lb` (the speaker's view of the cluster). */
export function addSpeakerOptions(cmd: Command): Command {
  return cmd
    .option('--speakers <nodes>', "comma-separated nodes whose speaker is alive in memberlist (default: a running speaker's memberlist view, else nodes with a Ready speaker pod)", parseNodeList)
    .option('--ignore-exclude-lb', 'ignore the node.kubernetes.io/exclude-from-external-load-balancers label, as the speaker flag does')
    .option('--lb-class <class>', "MetalLB's --lb-class: it handles only Services with this spec.loadBalancerClass (default: only Services without one)");
}

/**
 * Adds `--speaker <host:port>` and `--speaker-selector <selector>`, and with `discoveryToggle`
 * `--no-speaker-discovery` (for `explain` and `whois`; `members` always asks a speaker).
 */
export function addSpeakerViewOption(cmd: Command, discoveryToggle = true): Command {
  cmd
    .option('--speaker <host:port>', 'ask this speaker (its metrics address: --metrics-bind-address and --port) for its memberlist view instead of finding a speaker pod')
    .option('--speaker-selector <selector>', `label selector of the speaker pods to ask through the API server (default "${DEFAULT_SPEAKER_SELECTOR}": MetalLB's and metallb-ts's)`);
  if (discoveryToggle) {
    cmd.option('--no-speaker-discovery', "live mode: do not ask a speaker pod for its memberlist view; derive the live speakers from the speaker pods' Ready condition");
  }
  return cmd;
}

/** Adds `-o, --output <format>` restricted to `choices` (commander rejects others: exit 2). */
export function addOutputOption(cmd: Command, choices: readonly string[] = OUTPUT_FORMATS, defaultValue: string = 'table'): Command {
  return cmd.addOption(new Option('-o, --output <format>', 'output format').choices(choices).default(defaultValue));
}

/** `--speakers` value: a comma-separated list of node names, no empty entries (else a usage error). */
export function parseNodeList(value: string): string[] {
  const nodes = value.split(',').map((s) => s.trim());
  if (nodes.some((n) => n === '')) throw new InvalidArgumentError('empty node name (use a,b,c).');
  return nodes;
}

/**
 * The ClusterState the options point at: the snapshot files of `-f`, else the live cluster of the
 * kubeconfig (read-only; see readClusterState).
 * @throws UserError (exit 2) for `-f` together with `--kubeconfig`/`--context`, a broken kubeconfig
 *   or unknown context; InputError / UserError from loadSnapshot for unreadable, broken or empty input.
 * @throws ClusterUnreachableError (exit 3) when the API server cannot be reached or forbids a read.
 */
export async function loadState(opts: StateOptions, stdin?: NodeJS.ReadableStream | string): Promise<ClusterState> {
  return (await loadStateWithSource(opts, stdin)).state;
}

/** loadState, and where the state came from (for `explain`'s `source`). Throws as loadState. */
export async function loadStateWithSource(opts: StateOptions, stdin?: NodeJS.ReadableStream | string): Promise<{ state: ClusterState; source: StateSource }> {
  if (opts.filename && opts.filename.length > 0) {
    if (opts.kubeconfig !== undefined || opts.context !== undefined) {
      throw new UserError('-f reads a snapshot; --kubeconfig and --context are for the live cluster: give one or the other');
    }
    const state = await loadSnapshot(opts.filename, stdin === undefined ? {} : { stdin });
    return { state, source: { kind: 'files', files: opts.filename.map((f) => (f === '-' ? STDIN_NAME : f)) } };
  }
  const { kc, read } = await liveRead(opts);
  return { state: await read, source: { kind: 'live', server: (await import('../kube/client.ts')).serverOf(kc) } };
}

/** The kubeconfig of the options and a started read of the live ClusterState (throws as loadState). */
async function liveRead(opts: StateOptions): Promise<{ kc: KubeConfig; read: Promise<ClusterState> }> {
  // Loaded only for live access: the Kubernetes client takes about a second to import.
  const [{ loadKubeConfig }, { readClusterState }] = await Promise.all([import('../kube/client.ts'), import('../kube/live.ts')]);
  const kc = loadKubeConfig({
    ...(opts.kubeconfig !== undefined ? { kubeconfig: opts.kubeconfig } : {}),
    ...(opts.context !== undefined ? { context: opts.context } : {}),
  });
  return { kc, read: readClusterState(kc, { metallbNamespace: opts.metallbNamespace ?? DEFAULT_METALLB_NAMESPACE }) };
}

/**
 * Which live speakers the election uses beyond the state, and what the output says about it
 * (added to `explain`'s `speakers` and `whois`'s `speakers`).
 */
export interface SpeakerViewChoice {
  /** a speaker's view as the election's live speakers (speakersFromView); absent: `--speakers` or derived from the state */
  memberlist?: { speakers: string[] | null };
  /** `from`: where that view came from; `fallback`: why live mode derived the speakers instead (`no speaker reachable: ...`) */
  report: { from?: SpeakerViewOrigin; fallback?: string };
}

/**
 * Rejects speaker-view options that would be silently ignored, before anything is read: `--speaker`
 * with `--speakers`, `--speaker-selector` with `--speaker`, `--speakers`, `-f` or
 * `--no-speaker-discovery`, and `--no-speaker-discovery` with `--speaker`; then parses `--speaker`.
 * @throws UserError (exit 2), one line naming both options; or parseSpeakerAddress's for a bad `--speaker`.
 */
export function checkSpeakerViewOptions(opts: StateOptions): void {
  const both = (why: string) => new UserError(`${why}: give one or the other`);
  const files = (opts.filename?.length ?? 0) > 0;
  if (opts.speaker !== undefined) {
    if (opts.speakers) throw both('--speakers lists the live speakers, --speaker asks a speaker for them');
    if (opts.speakerSelector !== undefined) throw both('--speaker-selector picks the speaker pods to ask through the API server, --speaker names one directly');
    if (opts.speakerDiscovery === false) throw both('--no-speaker-discovery asks no speaker, --speaker asks one');
    parseSpeakerAddress(opts.speaker);
  }
  if (opts.speakerSelector !== undefined) {
    if (files) throw both('--speaker-selector picks the speaker pods of the live cluster to ask, -f reads a snapshot and asks none');
    if (opts.speakers) throw both('--speakers lists the live speakers, --speaker-selector picks the speaker pods to ask for them');
    if (opts.speakerDiscovery === false) throw both('--speaker-selector picks the speaker pods to ask, --no-speaker-discovery asks none');
  }
}

/**
 * loadStateWithSource, plus the speaker view the election should use, as MetalLB's speakers see
 * it: `--speakers` wins (no view); else `--speaker HOST:PORT` is asked directly (with or without
 * `-f`); else, live and without `--no-speaker-discovery`, a speaker pod is found and asked through
 * the API server's pod proxy (discoverSpeakerView: `--speaker-selector` in `--metallb-namespace`,
 * Ready pods first, a few pods with a 2 s deadline each, progress on stderr when slow) while the
 * state is read; when none answers, the speakers are derived from the state as before and
 * `report.fallback` says why. The speaker is asked while the state is read, but `check` (e.g.
 * "is the Service there") runs on the state first, so its errors win over the speaker's; on any
 * error the speaker request is aborted.
 * @throws checkSpeakerViewOptions's usage errors first; then as loadStateWithSource; what `check`
 *   throws; UserError (exit 2) for a selector the API server rejects; UserError (exit 3) when the
 *   speaker named with `--speaker` cannot be reached or answers no member view.
 */
export async function loadDiagnosticState(
  opts: StateOptions,
  stdin?: NodeJS.ReadableStream | string,
  check?: (state: ClusterState) => void,
): Promise<{ state: ClusterState; source: StateSource; speakerView: SpeakerViewChoice }> {
  checkSpeakerViewOptions(opts);
  if (opts.speaker !== undefined) {
    const abort = new AbortController();
    const asked = fetchMembers(opts.speaker, { signal: abort.signal });
    asked.catch(() => {}); // awaited below, after the state and `check`: their errors come first
    try {
      const loaded = await loadStateWithSource(opts, stdin);
      check?.(loaded.state);
      const view = await asked;
      return {
        ...loaded,
        speakerView: {
          memberlist: { speakers: speakersFromView(view) },
          report: { from: { via: 'address', address: opts.speaker.trim(), pod: null, node: 'self' in view ? view.self : null } },
        },
      };
    } finally {
      abort.abort();
    }
  }
  if (opts.speakers || (opts.filename && opts.filename.length > 0) || opts.speakerDiscovery === false) {
    const loaded = await loadStateWithSource(opts, stdin);
    check?.(loaded.state);
    return { ...loaded, speakerView: { report: {} } };
  }
  const { kc, read } = await liveRead(opts);
  const { kubeGet, serverOf } = await import('../kube/client.ts');
  const abort = new AbortController();
  const discovery = discoverSpeakerView((path, o) => kubeGet(kc, path, o), {
    namespace: opts.metallbNamespace ?? DEFAULT_METALLB_NAMESPACE,
    ...(opts.speakerSelector !== undefined ? { selector: opts.speakerSelector } : {}),
    onSlow: (m) => process.stderr.write(`metallb-ts: ${m}\n`),
    signal: abort.signal,
  });
  discovery.catch(() => {}); // awaited below, after the state and `check`: their errors come first
  try {
    const state = await read;
    check?.(state);
    const found = await discovery;
    const source: StateSource = { kind: 'live', server: serverOf(kc) };
    if (!found.ok) return { state, source, speakerView: { report: { fallback: found.reason } } };
    return { state, source, speakerView: { memberlist: { speakers: speakersFromView(found.view) }, report: { from: found.from } } };
  } finally {
    abort.abort();
  }
}

/**
 * The per-snapshot diagnostic context (the controller's configuration and dry run, each speaker's
 * own configuration, live speakers, election index) for `explain` and `whois`; `view` is
 * loadDiagnosticState's speaker view (the live speakers when `--speakers` is absent). Speakers
 * that reject their configuration are part of the answer, not an error. `focus` (`namespace/name`,
 * explain's Service): the dry run is complete for that Service only (diagnosticContext's focus).
 * @throws UserError (exit 2) when MetalLB's controller rejects the configuration; `validate` lists why.
 */
export function diagnostics(state: ClusterState, opts: StateOptions = {}, view?: SpeakerViewChoice, focus?: string): DiagnosticContext {
  try {
    return diagnosticContext(state, {
      ...(focus !== undefined ? { focus } : {}),
      ...(opts.speakers ? { speakers: opts.speakers } : {}),
      ...(view?.memberlist ? { memberlist: view.memberlist } : {}),
      ignoreExcludeLB: opts.ignoreExcludeLb === true,
      ...(opts.lbClass !== undefined ? { loadBalancerClass: opts.lbClass } : {}),
      ...(opts.metallbNamespace !== undefined ? { metallbNamespace: opts.metallbNamespace } : {}),
    });
  } catch (err) {
    throw rejectedConfig(err);
  }
}
