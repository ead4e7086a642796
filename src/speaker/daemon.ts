/**
 * The speaker daemon's composition root (`metallb-ts speaker`; src/commands/speaker.ts parses its
 * flags and calls runSpeaker or speakerDryRunOf): MetalLB v0.16.1's speaker for one node. Wires the
 * cluster watches, the Layer 2 data plane (announcer.ts), who is alive (memberlist through
 * membership-memberlist.ts and membership-speakerlist.ts with MetalLB's rejoin policy, else every
 * Node), the Speaker (speaker.ts: the core's Layer 2 and BGP decisions, ServiceL2Status,
 * ServiceBGPStatus, FRRConfiguration `metallb-<node>`, Events), the ConfigurationState writer, the
 * `/metrics`, `/healthz`, `/readyz` and `/debug/members` servers, and SIGINT/SIGTERM.
 */
import { UserError } from '../core/errors.ts';
import type { ClusterState, Pod } from '../core/kube.ts';
import type { Membership } from '../core/membership/types.ts';
import { jsonLogger, type LogLevel } from '../runtime/log.ts';
import { VERSION } from '../runtime/version.ts';
import type { L2DataPlane } from './announcer.ts';
import type { SpeakerDryRun } from './dry-run.ts';
import type { EndpointServer } from './http.ts';
import type { OwnerRef } from './l2status.ts';

/** MetalLB's fixed path of the optional memberlist config file (a ConfigMap mount); `--ml-config-path` default. */
export const DEFAULT_ML_CONFIG_PATH = '/etc/metallb/memberlist/config.json';

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

/** What the speaker runs with: the `speaker` command's flags, checked and resolved. */
export interface SpeakerOptions {
  /** this Kubernetes node (spec.nodeName) */
  node: string;
  /** the namespace MetalLB runs in */
  namespace: string;
  /** where frr-k8s runs and `metallb-<node>` is written */
  frrk8sNamespace: string;
  kubeconfig?: string;
  context?: string;
  /** port of /metrics and /debug/members (0: a free one) */
  port: number;
  /** port of /healthz and /readyz (0: a free one) */
  healthProbePort: number;
  metricsBindAddress: string;
  logLevel: LogLevel;
  /** this speaker's Pod, owner of the status objects; none: no owner reference */
  podName?: string;
  /** MetalLB's `--lb-class`; undefined: only Services without spec.loadBalancerClass */
  lbClass?: string;
  ignoreExcludeLB: boolean;
  /** whether the Warning Event notAnnounced is recorded */
  unannouncedEvents: boolean;
  l2DataPlane: L2DataPlane;
  bgpType: 'frr-k8s';
  /** debounce of FRRConfiguration writes (ms); undefined: MetalLB's 3 s */
  frrDebounceMs?: number;
  /** null: memberlist off, every Node counts as a live speaker */
  memberlist: MemberlistSettings | null;
  /** `--ml-config-path` when given on the command line: logged as ignored when memberlist is off */
  ignoredConfigPath?: string;
}

/**
 * Runs the speaker until SIGINT/SIGTERM (or until it crashes); on a signal it withdraws its Layer 2
 * announcements, stops its writers and servers, and resolves with the exit status 0.
 * @throws UserError (exit 2) for a port that cannot be served, an unreadable memberlist key or a
 *   memberlist bind failure; InputError for a bad memberlist config file; UserError/
 *   ClusterUnreachableError (exit 3) when the cluster cannot be read.
 */
export async function runSpeaker(options: SpeakerOptions): Promise<number> {
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
    import('./announcer.ts'),
    import('./api.ts'),
    import('./events.ts'),
    import('./http.ts'),
    import('./membership.ts'),
    import('./metrics.ts'),
    import('./speaker.ts'),
    import('../core/frrk8s/config.ts'),
    import('../kube/configuration-state.ts'),
  ]);
  const { node, namespace, frrk8sNamespace, bgpType, frrDebounceMs, memberlist: ml } = options;
  // Without client-node for a service account or a plain kubeconfig (src/kube/access.ts).
  const kc = loadClusterAccess({ ...(options.kubeconfig ? { kubeconfig: options.kubeconfig } : {}), ...(options.context ? { context: options.context } : {}) });
  const server = serverOf(kc);
  const log = jsonLogger({ level: options.logLevel });
  log.info({ op: 'startup', version: VERSION, node, namespace, frrk8sNamespace, bgpType, server, msg: `metallb-ts speaker starting ${VERSION}` });

  // The L2 data plane first: a missing raw-socket addon or CAP_NET_RAW is one line, before any API call.
  const metrics = speakerMetrics({ processMetrics: true });
  const l2 = await createL2Announcer(options.l2DataPlane, log, undefined, metrics.layer2);
  // One client for the speaker's reads of single objects and its writes (ServiceL2Status, Events).
  const api = new KubeClient(kc, { timeoutMs: 15_000, userAgent: 'metallb-ts-speaker' });
  let owner: OwnerRef | null = null;
  if (options.podName) {
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(options.podName)}`;
    let pod: Pod;
    try {
      pod = await api.request<Pod>({ path, timeoutMs: 30_000 });
    } catch (err) {
      throw apiError(err, { verb: 'get', resource: `v1 pods ${namespace}/${options.podName}`, server });
    }
    owner = { apiVersion: 'v1', kind: 'Pod', name: options.podName, uid: String(pod.metadata?.uid ?? '') };
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
      import('./membership-memberlist.ts'),
      import('./membership-speakerlist.ts'),
      import('../core/membership/config.ts'),
      import('./memberlist-metrics.ts'),
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
    if (options.ignoredConfigPath !== undefined) log.warn({ op: 'startup', path: options.ignoredConfigPath, warning: '--ml-config-path is ignored: memberlist is off (it needs --ml-bindaddr and --ml-labels)' });
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
    ignoreExcludeLB: options.ignoreExcludeLB,
    unannouncedEvents: options.unannouncedEvents,
    ...(options.lbClass !== undefined ? { lbClass: options.lbClass } : {}),
  });

  const servers: EndpointServer[] = [];
  const closeServers = () => Promise.all(servers.map((s) => s.close()));
  try {
    servers.push(await serveEndpoints(options.metricsBindAddress, options.port, { registry: metrics.registry, members: membersView }));
    servers.push(await serveEndpoints(options.metricsBindAddress, options.healthProbePort, { ready: () => speaker.isReady }));
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

/** What `speaker --dry-run` runs: the speaker's options, and where the cluster state comes from. */
export interface SpeakerDryRunRequest {
  node: string;
  namespace: string;
  frrk8sNamespace: string;
  bgpType: 'frr-k8s';
  /** a snapshot (files, directories, `-` for stdin); absent: a read-only read of the live cluster */
  filename?: string[];
  kubeconfig?: string;
  context?: string;
  /** the live speakers (memberlist's view); null: every Node */
  speakers: string[] | null;
  ignoreExcludeLB: boolean;
  unannouncedEvents: boolean;
  /** receives the snapshot's warnings (loadSnapshot's onWarning), one line each */
  onWarning?: (message: string) => void;
  lbClass?: string;
  podName?: string;
}

/**
 * `speaker --dry-run`: runs the speaker of `req.node` once over a snapshot or a read-only read of
 * the live cluster (speakerDryRun of dry-run.ts) and returns what it would write, BGP passwords
 * redacted.
 * @throws UserError (exit 2) when the state has no Node `req.node`, InputError for a bad snapshot,
 *   ClusterUnreachableError (exit 3) when the cluster cannot be read.
 */
export async function speakerDryRunOf(req: SpeakerDryRunRequest): Promise<SpeakerDryRun> {
  const { node, namespace, frrk8sNamespace } = req;
  let state: ClusterState;
  if (req.filename && req.filename.length > 0) {
    const { loadSnapshot } = await import('../kube/snapshot.ts');
    state = await loadSnapshot(req.filename, req.onWarning ? { onWarning: req.onWarning } : {});
  } else {
    const [{ loadKubeConfig }, { readClusterState }] = await Promise.all([import('../kube/client.ts'), import('../kube/live.ts')]);
    const kc = loadKubeConfig({ ...(req.kubeconfig ? { kubeconfig: req.kubeconfig } : {}), ...(req.context ? { context: req.context } : {}) });
    state = await readClusterState(kc, { metallbNamespace: namespace, frrk8sNamespace });
  }
  if (!state.nodes.some((n) => n.metadata?.name === node)) {
    const known = state.nodes.map((n) => n.metadata?.name).filter(Boolean);
    throw new UserError(`no Node "${node}" in the ${req.filename ? 'snapshot' : 'cluster'}${known.length ? ` (nodes: ${known.slice(0, 5).join(', ')}${known.length > 5 ? ', …' : ''})` : ''}`);
  }
  const { speakerDryRun, redactPasswords } = await import('./dry-run.ts');
  return redactPasswords(
    await speakerDryRun(state, {
      node,
      namespace,
      frrk8sNamespace,
      bgpType: req.bgpType,
      speakers: req.speakers,
      ignoreExcludeLB: req.ignoreExcludeLB,
      unannouncedEvents: req.unannouncedEvents,
      ...(req.lbClass !== undefined ? { lbClass: req.lbClass } : {}),
      ...(req.podName ? { podName: req.podName } : {}),
    }),
  );
}
