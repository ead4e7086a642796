/**
 * Options shared by the commands, so every command spells them the same way:
 * `-f, --filename` (repeatable), `-n, --namespace`, `-o, --output`, `--speakers`, `--ignore-exclude-lb`,
 * and the one place that turns them into a ClusterState.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { ClusterState } from '../core/kube.ts';
import { ConfigError, UserError } from '../core/errors.ts';
import { diagnosticContext, type DiagnosticContext } from '../core/explain/index.ts';
import { loadSnapshot } from '../kube/snapshot.ts';
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
}

/** Parsed `-o`. */
export interface OutputOptions {
  output: OutputFormat;
}

/** Adds `-f, --filename <path>` (repeatable). */
export function addFilenameOption(cmd: Command): Command {
  return cmd.option(
    '-f, --filename <path>',
    'cluster snapshot: a YAML/JSON file, a directory of them, or - for stdin (repeatable)',
    (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
  );
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
    .option('--ignore-exclude-lb', 'ignore the node.kubernetes.io/exclude-from-external-load-balancers label, as the speaker flag does');
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
 * The ClusterState the options point at: the snapshot files of `-f`.
 * @throws UserError (exit 2) without `-f`: reading a live cluster is not available yet.
 * @throws InputError / UserError from loadSnapshot for unreadable, broken or empty input.
 */
export async function loadState(opts: StateOptions, stdin?: NodeJS.ReadableStream | string): Promise<ClusterState> {
  if (!opts.filename || opts.filename.length === 0) {
    throw new UserError('live cluster access is not available yet; pass a snapshot with -f FILE|DIR (or -f - for stdin)');
  }
  return loadSnapshot(opts.filename, stdin === undefined ? {} : { stdin });
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
