/**
 * `metallb-ts speaker --node-name NODE`: parses the flags and makes one call, runSpeaker of
 * src/speaker/daemon.ts (speakerDryRunOf with `--dry-run`). MetalLB v0.16.1's speaker for one
 * node: watches the cluster, makes the core's Layer 2 and BGP decisions for this node, logs `serviceAnnounced` /
 * `serviceWithdrawn`, records `nodeAssigned` Events, keeps this node's ServiceL2Status and
 * ServiceBGPStatus objects and its FRRConfiguration `metallb-<node>` (BGP through frr-k8s), answers
 * ARP/NDP for what it wins in Layer 2, and serves `/metrics`, `/healthz`, `/readyz`. Runs until
 * SIGINT/SIGTERM, then withdraws its Layer 2 announcements (exit 0). Exit 2 for bad flags, 3 when
 * the cluster cannot be read.
 *
 * `--dry-run`: what the speaker on NODE would write (FRRConfiguration, ServiceBGPStatus,
 * ServiceL2Status, Events), computed by the same Speaker over a snapshot (`-f`) or a read-only
 * read of the live cluster, without writing anything (src/speaker/dry-run.ts).
 *
 * Flags follow MetalLB's speaker (with its environment variable defaults). Who is alive: with
 * `--ml-bindaddr` and `--ml-labels` set, memberlist (MetalLB's speakerlist: joins the speaker pods
 * listed by `--ml-labels` in `--ml-namespace`, rejoins when its own Node is created or its labels or
 * NetworkUnavailable condition change); otherwise every Node.
 * The BGP type is MetalLB's `METALLB_BGP_TYPE`: only `frr-k8s` runs here (the default).
 */
import { Option, type Command } from 'commander';
import { UserError } from '../core/errors.ts';
import { oneLine } from './frame.ts';
import { metallbNamespaceOf, portNumber } from './runtime-options.ts';
import { DEFAULT_METALLB_NAMESPACE } from '../core/kube.ts';
import { LOG_LEVELS, type LogLevel } from '../runtime/log.ts';
import type { L2DataPlane } from '../speaker/announcer.ts';
import { DEFAULT_ML_CONFIG_PATH, runSpeaker, speakerDryRunOf, type MemberlistSettings, type SpeakerOptions } from '../speaker/daemon.ts';
import { isIP } from 'node:net';

export type { MemberlistSettings } from '../speaker/daemon.ts';

/** Parsed flags (commander's camel-cased names). */
interface SpeakerFlags {
  nodeName?: string;
  podName?: string;
  namespace?: string;
  kubeconfig?: string;
  context?: string;
  port: number;
  healthProbePort: number;
  metricsBindAddress: string;
  logLevel: LogLevel;
  lbClass?: string;
  ignoreExcludeLb?: boolean;
  /** false with `--no-unannounced-events` (or METALLB_TS_UNANNOUNCED_EVENTS=false) */
  unannouncedEvents: boolean;
  mlBindaddr?: string;
  mlBindport?: string;
  mlLabels?: string;
  mlNamespace?: string;
  mlSecretKeyPath?: string;
  mlWanConfig?: boolean;
  mlConfigPath: string;
  /** `raw`: answer ARP/NDP on the node's interfaces (needs CAP_NET_RAW); `log`: only log what would be announced. */
  l2DataPlane: L2DataPlane;
  /** `--bgp-type` / METALLB_BGP_TYPE */
  bgpType: string;
  /** `--frrk8s-namespace` / FRRK8S_NAMESPACE; default: the MetalLB namespace */
  frrk8sNamespace?: string;
  /** `--bgp-debounce-timeout` / METALLB_BGP_DEBOUNCE_TIMEOUT, milliseconds as text */
  bgpDebounceTimeout?: string;
  dryRun?: boolean;
  filename?: string[];
  output?: string;
  /** `--speakers` for the dry run */
  speakers?: string;
}

/**
 * `--bgp-debounce-timeout` (MetalLB's flag, also METALLB_BGP_DEBOUNCE_TIMEOUT): a positive integer
 * of milliseconds, or undefined for the default. MetalLB v0.16.1 applies it in frr mode only and
 * keeps 3 s for frr-k8s; metallb-ts applies it to the FRRConfiguration writes.
 * @throws UserError (exit 2) for anything else, as MetalLB exits for it.
 */
export function bgpDebounceMs(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(ms > 0 && Number.isSafeInteger(ms))) throw new UserError(`--bgp-debounce-timeout: invalid BGP debounce timeout "${value}": must be a positive integer of milliseconds`);
  return ms;
}

/** The BGP implementations MetalLB knows (`METALLB_BGP_TYPE`), and the one metallb-ts runs. */
const BGP_TYPES = ['native', 'frr', 'frr-k8s'] as const;

/**
 * Checks `--bgp-type` / METALLB_BGP_TYPE. MetalLB's binary defaults to `native` and its Helm chart
 * to `frr-k8s`; metallb-ts speaks BGP only through frr-k8s and defaults to it.
 * @throws UserError (exit 2) naming what is supported, for `native`, `frr` or anything else.
 */
export function checkBGPType(value: string): 'frr-k8s' {
  if (value === 'frr-k8s') return value;
  if ((BGP_TYPES as readonly string[]).includes(value)) {
    throw new UserError(`BGP type "${value}" (METALLB_BGP_TYPE / --bgp-type) is not supported: metallb-ts runs BGP through frr-k8s only; use frr-k8s`);
  }
  throw new UserError(`unknown BGP type "${value}" (METALLB_BGP_TYPE / --bgp-type): MetalLB knows native, frr and frr-k8s; metallb-ts runs frr-k8s`);
}

/** The memberlist settings the `--ml-*` flags ask for, or null (memberlist off). Throws UserError for a bad port. */
export function memberlistSettings(f: Pick<SpeakerFlags, 'mlBindaddr' | 'mlBindport' | 'mlLabels' | 'mlNamespace' | 'mlSecretKeyPath' | 'mlWanConfig'> & { mlConfigPath?: string }): MemberlistSettings | null {
  // memberlistEnabled() of src/speaker/membership-memberlist.ts, inlined: importing that module
  // costs every command about 0.2 s at start-up.
  if (!f.mlBindaddr || !f.mlLabels) return null;
  const portText = f.mlBindport === undefined || f.mlBindport === '' ? '7946' : f.mlBindport;
  const bindPort = /^\d+$/.test(portText) ? Number(portText) : NaN;
  if (!(bindPort >= 0 && bindPort <= 65535)) throw new UserError(`--ml-bindport: not a port number: ${portText}`);
  if (!isIP(f.mlBindaddr!)) throw new UserError(`--ml-bindaddr: not an IP address: ${f.mlBindaddr}`);
  return {
    bindAddr: f.mlBindaddr!,
    bindPort,
    labels: f.mlLabels!,
    wan: f.mlWanConfig === true,
    ...(f.mlNamespace ? { namespace: f.mlNamespace } : {}),
    ...(f.mlSecretKeyPath ? { secretKeyPath: f.mlSecretKeyPath } : {}),
    ...(f.mlConfigPath ? { configPath: f.mlConfigPath } : {}),
  };
}

/** Registers `speaker` on `program`. */
export function registerSpeaker(program: Command): void {
  const env = process.env;
  const cmd = program
    .command('speaker')
    .description("run MetalLB's speaker for one node: announce/withdraw decisions, ServiceL2Status, events, /metrics")
    .option('--node-name <node>', 'name of this Kubernetes node (spec.nodeName; env METALLB_NODE_NAME)', env.METALLB_NODE_NAME)
    .option('--pod-name <pod>', 'name of this speaker pod, owner of the ServiceL2Status objects (env METALLB_POD_NAME)', env.METALLB_POD_NAME)
    .option('--namespace <ns>', `namespace MetalLB runs in (env METALLB_NAMESPACE; default: the pod's, else ${DEFAULT_METALLB_NAMESPACE})`)
    .option('--kubeconfig <path>', 'kubeconfig file (default: KUBECONFIG, ~/.kube/config, in-cluster service account)')
    .option('--context <name>', 'kubeconfig context to use (default: its current-context)')
    .option('--port <port>', 'metrics port: /metrics, /healthz (plain HTTP)', portNumber, 9120)
    .option('--health-probe-port <port>', 'port for /healthz and /readyz', portNumber, 17472)
    .option('--metrics-bind-address <host>', 'address the metrics and health ports listen on; 0.0.0.0 and :: mean every IPv4 and IPv6 address, as in MetalLB', '0.0.0.0')
    .addOption(new Option('--log-level <level>', 'log level').choices([...LOG_LEVELS]).default('info'))
    .option('--lb-class <class>', 'handle only services of this spec.loadBalancerClass (default: only those without one)')
    .option('--ignore-exclude-lb', 'ignore the node.kubernetes.io/exclude-from-external-load-balancers label')
    .addOption(
      new Option(
        '--no-unannounced-events',
        'do not record the Warning Event notAnnounced on Services no node announces (env METALLB_TS_UNANNOUNCED_EVENTS=false; the log line and the metallb_speaker_unannounced gauge stay)',
      ).default(env.METALLB_TS_UNANNOUNCED_EVENTS !== 'false'),
    )
    .addOption(
      new Option('--l2-data-plane <mode>', "raw: answer ARP/NDP on the node's interfaces (needs CAP_NET_RAW); log: only log announcements (env METALLB_TS_L2_DATA_PLANE)")
        .choices(['raw', 'log'])
        .default(env.METALLB_TS_L2_DATA_PLANE === 'log' ? 'log' : 'raw'),
    )
    .option('--ml-bindaddr <addr>', 'memberlist bind address, the pod IP; with --ml-labels turns memberlist on (env METALLB_ML_BIND_ADDR)', env.METALLB_ML_BIND_ADDR)
    .option('--ml-bindport <port>', 'memberlist bind port (env METALLB_ML_BIND_PORT)', env.METALLB_ML_BIND_PORT || '7946')
    .option('--ml-labels <labels>', 'label selector of the speaker pods to join; with --ml-bindaddr turns memberlist on (env METALLB_ML_LABELS)', env.METALLB_ML_LABELS)
    .option('--ml-namespace <ns>', 'namespace of the speaker pods to join (default: the MetalLB namespace)')
    .option('--ml-secret-key-path <dir>', 'directory holding the memberlist secret file `secretkey` (env METALLB_ML_SECRET_KEY_PATH; none: unencrypted)', env.METALLB_ML_SECRET_KEY_PATH)
    .option('--ml-wan-config', "memberlist's WAN timings instead of the LAN ones")
    .option(
      '--ml-config-path <file>',
      "MetalLB's optional memberlist config file (JSON, every field required; replaces the LAN/WAN timings when it exists, a missing file means the defaults). metallb-ts's addition: MetalLB has the path fixed",
      DEFAULT_ML_CONFIG_PATH,
    )
    .option('--bgp-type <type>', 'BGP implementation (env METALLB_BGP_TYPE): only frr-k8s is supported', env.METALLB_BGP_TYPE || 'frr-k8s')
    .option(
      '--bgp-debounce-timeout <ms>',
      "debounce of FRRConfiguration writes in milliseconds, a positive integer (env METALLB_BGP_DEBOUNCE_TIMEOUT; default 3000, MetalLB's)",
      env.METALLB_BGP_DEBOUNCE_TIMEOUT || undefined,
    )
    .option('--frrk8s-namespace <ns>', 'namespace frr-k8s runs in, where metallb-<node> is written (env FRRK8S_NAMESPACE; default: the MetalLB namespace)', env.FRRK8S_NAMESPACE || undefined)
    .option('--dry-run', 'write nothing: print what the speaker on --node-name would write (FRRConfiguration, ServiceBGPStatus, ServiceL2Status, Events)')
    .option(
      '-f, --filename <path>',
      'with --dry-run: a cluster snapshot (file, directory or - for stdin; repeatable) instead of a read-only read of the live cluster',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .addOption(new Option('-o, --output <format>', 'with --dry-run: output format').choices(['table', 'yaml', 'json']).default('table'))
    .option('--speakers <nodes>', 'with --dry-run: the nodes memberlist counts as alive, comma-separated (default: every Node)')
    .addHelpText(
      'after',
      '\nExamples:\n  metallb-ts speaker --node-name worker-1 --kubeconfig ~/.kube/config --port 0 --health-probe-port 0\n  metallb-ts speaker --node-name worker-1 --dry-run -f dump.yaml -o yaml',
    );
  cmd.action(async (opts: SpeakerFlags, command: Command) => {
    if (opts.dryRun) {
      process.exitCode = await runDryRun(opts, command);
      return;
    }
    for (const k of ['filename', 'output', 'speakers'] as const) {
      if (command.getOptionValueSource(k) === 'cli') throw new UserError(`--${k} is only for --dry-run`);
    }
    process.exitCode = await runSpeaker(speakerOptions(opts, command.getOptionValueSource('mlConfigPath') === 'cli'));
    // Shut down: a request still waiting on the API server (a watch, a list) must not keep the
    // process alive past the pod's grace period. stdout/stderr are synchronous here (files, pipes).
    process.exit();
  });
}

/**
 * The daemon's options from the flags: the node, the BGP type, the debounce, memberlist, the
 * namespaces. `configPathGiven`: whether `--ml-config-path` was on the command line (logged as
 * ignored when memberlist is off).
 * @throws UserError (exit 2) for a missing node name, an unsupported BGP type, a bad debounce or
 *   memberlist flag.
 */
function speakerOptions(opts: SpeakerFlags, configPathGiven: boolean): SpeakerOptions {
  const node = opts.nodeName;
  if (!node) throw new UserError('missing --node-name (or METALLB_NODE_NAME): the name of the node this speaker runs on');
  const bgpType = checkBGPType(opts.bgpType);
  const frrDebounceMs = bgpDebounceMs(opts.bgpDebounceTimeout);
  const memberlist = memberlistSettings(opts);
  const namespace = metallbNamespaceOf(opts.namespace);
  return {
    node,
    namespace,
    frrk8sNamespace: opts.frrk8sNamespace || namespace,
    ...(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {}),
    ...(opts.context ? { context: opts.context } : {}),
    port: opts.port,
    healthProbePort: opts.healthProbePort,
    metricsBindAddress: opts.metricsBindAddress,
    logLevel: opts.logLevel,
    ...(opts.podName ? { podName: opts.podName } : {}),
    ...(opts.lbClass !== undefined ? { lbClass: opts.lbClass } : {}),
    ignoreExcludeLB: opts.ignoreExcludeLb === true,
    unannouncedEvents: opts.unannouncedEvents !== false,
    l2DataPlane: opts.l2DataPlane,
    bgpType,
    ...(frrDebounceMs !== undefined ? { frrDebounceMs } : {}),
    memberlist,
    ...(configPathGiven && memberlist === null ? { ignoredConfigPath: opts.mlConfigPath } : {}),
  };
}

/**
 * `speaker --dry-run`: runs the speaker of `--node-name` once over a snapshot (`-f`) or a
 * read-only read of the live cluster (speakerDryRunOf of src/speaker/daemon.ts) and prints what it
 * would write. Exit 0; 1 when its configuration is rejected; 2 bad input; 3 cluster unreachable.
 */
async function runDryRun(opts: SpeakerFlags, command: Command): Promise<number> {
  const node = opts.nodeName;
  if (!node) throw new UserError('missing --node-name (or METALLB_NODE_NAME): the node whose speaker to run');
  const bgpType = checkBGPType(opts.bgpType);
  for (const [k, flag] of [
    ['mlBindaddr', '--ml-bindaddr'],
    ['mlLabels', '--ml-labels'],
    ['l2DataPlane', '--l2-data-plane'],
  ] as const) {
    if (command.getOptionValueSource(k) === 'cli') throw new UserError(`${flag} has no effect with --dry-run (use --speakers for the live speakers)`);
  }
  const namespace = opts.namespace || process.env.METALLB_NAMESPACE || DEFAULT_METALLB_NAMESPACE;
  const snapshot = opts.filename !== undefined && opts.filename.length > 0;
  if (snapshot && (opts.kubeconfig !== undefined || opts.context !== undefined)) {
    throw new UserError('-f reads a snapshot; --kubeconfig and --context are for the live cluster: give one or the other');
  }
  const speakers =
    opts.speakers === undefined
      ? null
      : opts.speakers
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
  const result = await speakerDryRunOf({
    node,
    namespace,
    frrk8sNamespace: opts.frrk8sNamespace || namespace,
    bgpType,
    ...(opts.filename ? { filename: opts.filename } : {}),
    ...(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {}),
    ...(opts.context ? { context: opts.context } : {}),
    speakers,
    ignoreExcludeLB: opts.ignoreExcludeLb === true,
    unannouncedEvents: opts.unannouncedEvents !== false,
    ...(opts.lbClass !== undefined ? { lbClass: opts.lbClass } : {}),
    ...(opts.podName ? { podName: opts.podName } : {}),
    // one line each, as src/cli.ts prints the other commands' snapshot warnings
    onWarning: (message) => process.stderr.write(`metallb-ts: warning: ${oneLine(message)}\n`),
  });
  const [{ renderSpeakerDryRun }, { writeResult }] = await Promise.all([import('../render/speaker-dry-run.ts'), import('../render/output.ts')]);
  writeResult((opts.output ?? 'table') as 'table' | 'json' | 'yaml', result, () => renderSpeakerDryRun(result));
  return result.configuration.accepted ? 0 : 1;
}
