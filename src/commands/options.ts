/**
 * Options shared by the commands, so every command spells them the same way:
 * `-f, --filename` (repeatable), `--kubeconfig`, `--context`, `--metallb-namespace`, `-n, --namespace`,
 * `-o, --output`, `--speakers`, `--ignore-exclude-lb`, and the one place that turns them into a
 * ClusterState: the snapshot files of `-f`, or the live cluster without `-f`.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { ClusterState } from '../core/kube.ts';
import { ConfigError, UserError } from '../core/errors.ts';
import { diagnosticContext, type DiagnosticContext } from '../core/explain/index.ts';
import { loadSnapshot, STDIN_NAME } from '../kube/snapshot.ts';
import { DEFAULT_METALLB_NAMESPACE } from '../core/kube.ts';
import { OUTPUT_FORMATS, type OutputFormat } from '../render/output.ts';

/** Parsed values of the state options (commander's camel-cased names). */
export interface StateOptions {
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
  return addClusterOptions(cmd.option(
    '-f, --filename <path>',
    'cluster snapshot: a YAML/JSON file, a directory of them, or - for stdin (repeatable); without it, the live cluster is read',
    (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
  ));
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
    .option(
      '--speakers <nodes>',
      'comma-separated nodes whose speaker is alive in memberlist (default: nodes with a Ready speaker pod)',
      parseNodeList,
    )
    .option('--ignore-exclude-lb', 'ignore the node.kubernetes.io/exclude-from-external-load-balancers label, as the speaker flag does')
    .option('--lb-class <class>', "MetalLB's --lb-class: it handles only Services with this spec.loadBalancerClass (default: only Services without one)");
}

/** Adds `-o, --output <format>` restricted to `choices` (commander rejects others: exit 2). */
export function addOutputOption(
  cmd: Command,
  choices: readonly string[] = OUTPUT_FORMATS,
  defaultValue: string = 'table',
): Command {
  return cmd.addOption(
    new Option('-o, --output <format>', 'output format').choices(choices).default(defaultValue),
  );
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
export async function loadStateWithSource(
  opts: StateOptions, stdin?: NodeJS.ReadableStream | string,
): Promise<{ state: ClusterState; source: StateSource }> {
  if (opts.filename && opts.filename.length > 0) {
    if (opts.kubeconfig !== undefined || opts.context !== undefined) {
      throw new UserError('-f reads a snapshot; --kubeconfig and --context are for the live cluster: give one or the other');
    }
    const state = await loadSnapshot(opts.filename, stdin === undefined ? {} : { stdin });
    return { state, source: { kind: 'files', files: opts.filename.map((f) => (f === '-' ? STDIN_NAME : f)) } };
  }
  // Loaded only for live access: the Kubernetes client takes about a second to import.
  const [{ loadKubeConfig, serverOf }, { readClusterState }] = await Promise.all([import('../kube/client.ts'), import('../kube/live.ts')]);
  const kc = loadKubeConfig({
    ...(opts.kubeconfig !== undefined ? { kubeconfig: opts.kubeconfig } : {}),
    ...(opts.context !== undefined ? { context: opts.context } : {}),
  });
  const state = await readClusterState(kc, { metallbNamespace: opts.metallbNamespace ?? DEFAULT_METALLB_NAMESPACE });
  return { state, source: { kind: 'live', server: serverOf(kc) } };
}

/**
 * The per-snapshot diagnostic context (effective config, live speakers, controller dry run,
 * election index) for `explain`, `whois` and `allocate`.
 * @throws UserError (exit 2) when MetalLB would reject the configuration; `validate` lists why.
 */
export function diagnostics(state: ClusterState, opts: StateOptions = {}): DiagnosticContext {
  try {
    return diagnosticContext(state, {
      ...(opts.speakers ? { speakers: opts.speakers } : {}),
      ignoreExcludeLB: opts.ignoreExcludeLb === true,
      ...(opts.lbClass !== undefined ? { loadBalancerClass: opts.lbClass } : {}),
      ...(opts.metallbNamespace !== undefined ? { metallbNamespace: opts.metallbNamespace } : {}),
    });
  } catch (err) {
    throw rejectedConfig(err);
  }
}

/** A ConfigError as the one-line "MetalLB would reject this configuration" user error; others unchanged. */
export function rejectedConfig(err: unknown): unknown {
  return err instanceof ConfigError
    ? new UserError(`MetalLB would reject this configuration: ${err.message} (see metallb-ts validate)`)
    : err;
}
