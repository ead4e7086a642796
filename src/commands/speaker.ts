/**
 * `metallb-ts speaker --node-name NODE`: MetalLB v0.16.1's speaker for one node. Watches the
 * cluster, makes the core's Layer 2 and BGP decisions for this node, logs `serviceAnnounced` /
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
import { metallbNamespaceOf, portNumber } from './runtime-options.ts';
import type { Pod } from '../core/kube.ts';
import { DEFAULT_METALLB_NAMESPACE, type ClusterState } from '../core/kube.ts';
import type { EndpointServer } from '../speaker/http.ts';
import { jsonLogger, LOG_LEVELS, type LogLevel } from '../runtime/log.ts';
import type { OwnerRef } from '../speaker/l2status.ts';
import type { L2DataPlane } from '../speaker/announcer.ts';
import type { Membership } from '../core/membership/types.ts';
import { VERSION } from '../runtime/version.ts';
import { isIP } from 'node:net';

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

/** Memberlist settings from the flags; null when memberlist is off (MetalLB: no bind address or no labels). */
export interface MemberlistSettings {
  bindAddr: string;
  bindPort: number;
  labels: string;
  /** namespace of the speaker pods; undefined = the MetalLB namespace */
  namespace?: string;
  secretKeyPath?: string;
  wan: boolean;
  /**
   * MetalLB's optional memberlist config file (JSON; replaces the LAN/WAN timings when it exists).
   * MetalLB reads the fixed path /etc/metallb/memberlist/config.json; `--ml-config-path` moves it.
   * undefined = MetalLB's path.
   */
  configPath?: string;
}

/** MetalLB's fixed path of the optional memberlist config file (a ConfigMap mount); `--ml-config-path` default. */
const DEFAULT_ML_CONFIG_PATH = '/etc/metallb/memberlist/config.json';

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
    .option('--metrics-bind-address <host>', 'address the metrics and health ports listen on', '0.0.0.0')
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
    process.exitCode = await runSpeaker(opts, { configPathGiven: command.getOptionValueSource('mlConfigPath') === 'cli' });
    // Shut down: a request still waiting on the API server (a watch, a list) must not keep the
    // process alive past the pod's grace period. stdout/stderr are synchronous here (files, pipes).
    process.exit();
  });
}

/**
 * Runs the speaker until SIGINT/SIGTERM; resolves with the exit status. `configPathGiven`: whether
 * `--ml-config-path` was on the command line (warned about as ignored when memberlist is off).
 * Throws UserError for bad flags or an unreachable cluster, InputError for a bad memberlist config file.
 */
async function runSpeaker(opts: SpeakerFlags, { configPathGiven = false }: { configPathGiven?: boolean } = {}): Promise<number> {
  // The Kubernetes client and the runtime load here, not at start-up: every other command
  // (explain, validate, completion...) would otherwise pay about a second for them.
  const [
    { apiError, KubeClient, loadClusterAccess, serverOf },
    { ClusterStateWatcher },
    { createL2Announcer },
    { restL2StatusApi, restBGPStatusApi, restFRRConfigurationApi },
    { SpeakerEvents },
    { serveEndpoints },
    { NodeListMembership },
    { speakerMetrics },
    { Speaker, SPEAKER_BGP_KINDS, nodeChangeMatters },
    { frrConfigurationName },
    { ConfigurationStateWriter },
  ] = await Promise.all([
    import('../kube/client.ts'),
    import('../kube/live.ts'),
    import('../speaker/announcer.ts'),
    import('../speaker/api.ts'),
    import('../speaker/events.ts'),
    import('../speaker/http.ts'),
    import('../speaker/membership.ts'),
    import('../speaker/metrics.ts'),
    import('../speaker/speaker.ts'),
    import('../core/frrk8s/config.ts'),
    import('../kube/configuration-state.ts'),
  ]);
  const node = opts.nodeName;
  if (!node) throw new UserError('missing --node-name (or METALLB_NODE_NAME): the name of the node this speaker runs on');
  const bgpType = checkBGPType(opts.bgpType);
  const frrDebounceMs = bgpDebounceMs(opts.bgpDebounceTimeout);
  const ml = memberlistSettings(opts);
  const namespace = metallbNamespaceOf(opts.namespace);
  const frrk8sNamespace = opts.frrk8sNamespace || namespace;
  // Without client-node for a service account or a plain kubeconfig (src/kube/access.ts).
  const kc = loadClusterAccess({ ...(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {}), ...(opts.context ? { context: opts.context } : {}) });
  const server = serverOf(kc);
  const log = jsonLogger({ level: opts.logLevel });
  log.info({ op: 'startup', version: VERSION, node, namespace, frrk8sNamespace, bgpType, server, msg: `metallb-ts speaker starting ${VERSION}` });

  // The L2 data plane first: a missing raw-socket addon or CAP_NET_RAW is one line, before any API call.
  const metrics = speakerMetrics({ processMetrics: true });
  const l2 = await createL2Announcer(opts.l2DataPlane, log, undefined, metrics.layer2);
  // One client for the speaker's reads of single objects and its writes (ServiceL2Status, Events).
  const api = new KubeClient(kc, { timeoutMs: 15_000, userAgent: 'metallb-ts-speaker' });
  let owner: OwnerRef | null = null;
  if (opts.podName) {
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(opts.podName)}`;
    let pod: Pod;
    try {
      pod = await api.request<Pod>({ path, timeoutMs: 30_000 });
    } catch (err) {
      throw apiError(err, { verb: 'get', resource: `v1 pods ${namespace}/${opts.podName}`, server });
    }
    owner = { apiVersion: 'v1', kind: 'Pod', name: opts.podName, uid: String(pod.metadata?.uid ?? '') };
  } else {
    log.info({ op: 'startup', msg: 'no --pod-name: ServiceL2Status objects get no owner reference' });
  }

  const events = new SpeakerEvents(api, log);
  const source = new ClusterStateWatcher(kc, {
    metallbNamespace: namespace,
    frrk8sNamespace,
    kinds: SPEAKER_BGP_KINDS,
    trim: true, // no managedFields or node images in the caches (issue #14)
    fieldSelectors: { frrConfigurations: `metadata.name=${frrConfigurationName(node)}` },
    log: ({ level, ...rest }) => (level === 'error' ? log.error(rest) : log.info(rest)),
  });
  // metallb_k8s_client_sync_age_seconds: how long the current API server outage has lasted (0: none)
  (await import('../kube/watch-metrics.ts')).registerSyncMetrics(metrics.registry, source);
  let membership: Membership;
  // The view served on /debug/members (`metallb-ts members`): every Node when memberlist is off.
  let membersView: () => unknown = () => ({
    memberlist: false,
    alive: source
      .state()
      .nodes.map((n) => n.metadata?.name ?? '')
      .filter(Boolean)
      .sort(),
  });
  if (ml) {
    const [{ MemberlistMember, readMemberlistKey, readMemberlistConfigFile }, { SpeakerListMembership, speakerPodIPs }, { LAN_CONFIG, WAN_CONFIG }, { registerMemberlistMetrics }] = await Promise.all([
      import('../speaker/membership-memberlist.ts'),
      import('../speaker/membership-speakerlist.ts'),
      import('../core/membership/config.ts'),
      import('../speaker/memberlist-metrics.ts'),
    ]);
    // MetalLB: a file there replaces the LAN/WAN defaults; absent = defaults; unreadable or invalid = exit (here: one line, exit 2).
    // Unknown fields: MetalLB (Go's encoding/json) ignores them; here each is a warn line with a "did you mean".
    const configPath = ml.configPath ?? DEFAULT_ML_CONFIG_PATH;
    const file = readMemberlistConfigFile(configPath, (path) => log.info({ op: 'startup', msg: 'loading memberlist config from file', path }));
    if (file) for (const warning of file.warnings) log.warn({ op: 'startup', path: configPath, warning });
    else log.info({ op: 'startup', msg: `no memberlist config file, using memberlist's default ${ml.wan ? 'WAN' : 'LAN'} configuration`, path: configPath });
    const fileConfig = file?.config;
    let key: Uint8Array | null = null;
    if (ml.secretKeyPath) {
      try {
        key = readMemberlistKey(ml.secretKeyPath);
      } catch (err) {
        throw new UserError(`cannot read the memberlist secret key (--ml-secret-key-path ${ml.secretKeyPath}): ${(err as Error).message}`);
      }
    }
    if (!key) log.warn({ op: 'startup', warning: 'no ml-secret-key set, memberlist traffic will not be encrypted' });
    const mlNamespace = ml.namespace ?? namespace;
    const mlLog = (message: string) => log.info({ op: 'memberDiscovery', msg: message });
    const member = new MemberlistMember({ name: node, bindAddr: ml.bindAddr, bindPort: ml.bindPort, keys: key ? [key] : null, config: fileConfig ?? (ml.wan ? WAN_CONFIG : LAN_CONFIG), log: mlLog });
    registerMemberlistMetrics(metrics.registry, member);
    membersView = () => ({ self: node, members: member.members().map((m) => ({ name: m.name, address: m.addr, port: m.port, state: m.state, incarnation: m.incarnation })) });
    const list = new SpeakerListMembership({
      member,
      log: mlLog,
      speakerIPs: () => speakerPodIPs((path, query) => api.request({ path, query, timeoutMs: 30_000 }), mlNamespace, ml.labels, ml.bindAddr),
    });
    // MetalLB's layer 2 controller calls Rejoin() on every Node change it handles.
    // MetalLB's layer 2 controller rejoins on SetNode of its own Node, which the NodeReconciler calls
    // for a create or a label / NetworkUnavailable change (not heartbeats; a delete finds no Node).
    source.onChange((c) => {
      if (c.list === 'nodes' && c.type !== 'delete' && c.object.metadata?.name === node && nodeChangeMatters(c)) void list.rejoin();
    });
    member.onChange(({ alive }) => log.info({ op: 'memberDiscovery', alive, msg: 'memberlist membership changed - forcing sync' }));
    log.info({ op: 'startup', bindAddr: ml.bindAddr, bindPort: ml.bindPort, labels: ml.labels, namespace: mlNamespace, msg: 'memberlist on: joining the speaker pods' });
    membership = {
      // A bind failure (address not on this host, port taken) is one line, exit 2, like bad flags.
      start: () =>
        list.start().catch((err: Error) => {
          throw new UserError(`memberlist cannot start on ${ml.bindAddr}:${ml.bindPort}: ${err.message.replace(/^memberlist: /, '')}`);
        }),
      stop: () => list.stop(),
      alive: () => list.alive(),
      onChange: (cb) => list.onChange(cb),
    };
  } else {
    log.info({ op: 'startup', msg: 'not starting fast dead node detection (memberlist), need ml-bindaddr / ml-labels config; every Node counts as a live speaker' });
    if (configPathGiven) log.warn({ op: 'startup', path: opts.mlConfigPath, warning: '--ml-config-path is ignored: memberlist is off (it needs --ml-bindaddr and --ml-labels)' });
    membership = new NodeListMembership();
  }
  const configState = new ConfigurationStateWriter({ api, namespace, component: { speaker: node }, type: 'configReconcilerValid', owner, log });
  const speaker = new Speaker({
    node,
    namespace,
    source,
    membership,
    l2,
    log,
    metrics,
    l2StatusApi: restL2StatusApi(api),
    bgpStatusApi: restBGPStatusApi(api),
    frrApi: restFRRConfigurationApi(api),
    bgpType,
    frrk8sNamespace,
    event: events.sink,
    owner,
    configReported: (error) => configState.report(error),
    ...(frrDebounceMs !== undefined ? { frrDebounceMs } : {}),
    ignoreExcludeLB: opts.ignoreExcludeLb === true,
    unannouncedEvents: opts.unannouncedEvents !== false,
    ...(opts.lbClass !== undefined ? { lbClass: opts.lbClass } : {}),
  });

  const servers: EndpointServer[] = [];
  const closeServers = () => Promise.all(servers.map((s) => s.close()));
  try {
    servers.push(await serveEndpoints(opts.metricsBindAddress, opts.port, { registry: metrics.registry, members: membersView }));
    servers.push(await serveEndpoints(opts.metricsBindAddress, opts.healthProbePort, { ready: () => speaker.isReady }));
  } catch (err) {
    await closeServers();
    throw new UserError((err as Error).message);
  }
  log.info({ op: 'startup', metrics: servers[0]!.address, health: servers[1]!.address, msg: 'serving /metrics on the metrics address, /healthz and /readyz on the health address' });

  let signalled: (sig: string) => void = () => {};
  const stopRequested = new Promise<string>((r) => {
    signalled = r;
  });
  const onSignal = (sig: NodeJS.Signals) => signalled(sig);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const shutdown = async (): Promise<void> => {
    log.info({ op: 'shutdown', msg: 'starting shutdown' });
    await speaker.stop();
    await configState.stop();
    await events.close();
    await closeServers();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    log.info({ op: 'shutdown', msg: 'done' });
  };

  try {
    await Promise.race([speaker.start(), stopRequested, speaker.crashed]);
  } catch (err) {
    await closeServers();
    source.stop();
    throw err;
  }
  if (!speaker.isReady) {
    // a signal before the first sync
    await shutdown();
    return 0;
  }
  log.info({ op: 'startup', node, msg: 'speaker ready' });
  await Promise.race([stopRequested, speaker.crashed]);
  await shutdown();
  return 0;
}

/**
 * `speaker --dry-run`: runs the speaker of `--node-name` once over a snapshot (`-f`) or a
 * read-only read of the live cluster and prints what it would write. Exit 0; 1 when its
 * configuration is rejected; 2 bad input; 3 cluster unreachable.
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
  const frrk8sNamespace = opts.frrk8sNamespace || namespace;
  let state: ClusterState;
  if (opts.filename && opts.filename.length > 0) {
    if (opts.kubeconfig !== undefined || opts.context !== undefined) {
      throw new UserError('-f reads a snapshot; --kubeconfig and --context are for the live cluster: give one or the other');
    }
    const { loadSnapshot } = await import('../kube/snapshot.ts');
    state = await loadSnapshot(opts.filename);
  } else {
    const [{ loadKubeConfig }, { readClusterState }] = await Promise.all([import('../kube/client.ts'), import('../kube/live.ts')]);
    const kc = loadKubeConfig({ ...(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {}), ...(opts.context ? { context: opts.context } : {}) });
    state = await readClusterState(kc, { metallbNamespace: namespace, frrk8sNamespace });
  }
  if (!state.nodes.some((n) => n.metadata?.name === node)) {
    const known = state.nodes.map((n) => n.metadata?.name).filter(Boolean);
    throw new UserError(`no Node "${node}" in the ${opts.filename ? 'snapshot' : 'cluster'}${known.length ? ` (nodes: ${known.slice(0, 5).join(', ')}${known.length > 5 ? ', …' : ''})` : ''}`);
  }
  const speakers =
    opts.speakers === undefined
      ? null
      : opts.speakers
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
  const [{ speakerDryRun, redactPasswords }, { renderSpeakerDryRun }, { writeResult }] = await Promise.all([
    import('../speaker/dry-run.ts'),
    import('../render/speaker-dry-run.ts'),
    import('../render/output.ts'),
  ]);
  const result = redactPasswords(
    await speakerDryRun(state, {
      node,
      namespace,
      frrk8sNamespace,
      bgpType,
      speakers,
      ignoreExcludeLB: opts.ignoreExcludeLb === true,
      unannouncedEvents: opts.unannouncedEvents !== false,
      ...(opts.lbClass !== undefined ? { lbClass: opts.lbClass } : {}),
      ...(opts.podName ? { podName: opts.podName } : {}),
    }),
  );
  writeResult((opts.output ?? 'table') as 'table' | 'json' | 'yaml', result, () => renderSpeakerDryRun(result));
  return result.configuration.accepted ? 0 : 1;
}
