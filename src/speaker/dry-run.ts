/**
 * `metallb-ts speaker --node-name N --dry-run`: what the speaker on N would write, computed by the
 * daemon's own code. A Speaker (src/speaker/speaker.ts) runs once over a fixed ClusterState with
 * ports that record instead of writing: the API writes it would make (FRRConfiguration,
 * ServiceBGPStatus, ServiceL2Status, in order), the events it would emit, its decision for every
 * Service, and the objects as they would stand afterwards. Nothing is sent anywhere; the L2 data
 * plane is not touched.
 */
import type { ClusterState, KubeObject, Pod, Service, ServiceBGPStatus, ServiceL2Status } from '../core/kube.ts';
import { namespacedName } from '../core/kube.ts';
import { isSpeakerPod } from '../core/election/speakers.ts';
import type { BGPStatusBody } from '../core/bgp/status.ts';
import { desiredServiceBGPStatus } from '../core/bgp/status.ts';
import type { FRRConfiguration } from '../core/frrk8s/types.ts';
import type { BGPType } from '../core/speaker/config.ts';
import { LABEL_ANNOUNCE_NODE, LABEL_SERVICE_NAME, LABEL_SERVICE_NAMESPACE, type OwnerRef } from '../core/status.ts';
import type { Membership } from '../core/membership/types.ts';
import { configurationStateMeta, configurationStateStatus, newConfigurationState } from '../core/configuration-state.ts';
import { jsonLogger, type LogLevel } from '../runtime/log.ts';
import { speakerMetrics } from './metrics.ts';
import { desiredL2Status, planL2Status, type L2StatusBody } from './l2status.ts';
import { Speaker, type StateSource } from './speaker.ts';
import type { FRRConfigurationApi } from './frrk8s.ts';
import type { StatusApi } from './status-writer.ts';

/** Options of speakerDryRun (the speaker's flags). */
export interface SpeakerDryRunOptions {
  readonly node: string;
  /** MetalLB's namespace (default `metallb-system`) */
  readonly namespace?: string;
  /** default: `namespace` */
  readonly frrk8sNamespace?: string;
  readonly bgpType?: BGPType;
  readonly ignoreExcludeLB?: boolean;
  readonly lbClass?: string;
  /** whether the Warning Event notAnnounced is recorded (default true; false as `--no-unannounced-events`: MetalLB's events only) */
  readonly unannouncedEvents?: boolean;
  /** the live speakers (memberlist's view); null: every Node (memberlist off) */
  readonly speakers?: readonly string[] | null;
  /** the speaker pod (owner of the status objects); default: the speaker pod on the node in the state */
  readonly podName?: string;
  /** receives the speaker's log lines (JSON, one per line); default: dropped */
  readonly log?: (line: string) => void;
  readonly logLevel?: LogLevel;
}

/** One API write the speaker would make. */
export interface DryRunWrite {
  readonly verb: 'create' | 'update' | 'patchStatus' | 'delete';
  readonly kind: 'FRRConfiguration' | 'ServiceBGPStatus' | 'ServiceL2Status' | 'ConfigurationState';
  readonly namespace: string;
  /** the object's name (`bgp-<generated>` / `l2-<generated>` for one created by generateName) */
  readonly name: string;
  /** the object sent (create/update), the status (patchStatus), absent for delete */
  readonly body?: unknown;
}

/** The decision for one Service on this node. */
export interface DryRunService {
  readonly service: string;
  /** `announce`, MetalLB's reason, or `noConfig` (the speaker has no configuration) */
  readonly bgp: string;
  readonly layer2: string;
  /** the BGPPeers its prefixes go to (ServiceBGPStatus `status.peers`) */
  readonly peers: readonly string[];
}

/** What speakerDryRun returns. */
export interface SpeakerDryRun {
  readonly node: string;
  readonly namespace: string;
  readonly frrk8sNamespace: string;
  /** the speaker's configuration: accepted, or the stage and error at which MetalLB rejects it */
  readonly configuration:
    | { readonly accepted: true; readonly droppedPeers: readonly string[]; readonly droppedBGPAdvertisements: readonly string[] }
    | { readonly accepted: false; readonly stage: string; readonly error: string; readonly droppedPeers: readonly string[]; readonly droppedBGPAdvertisements: readonly string[] };
  readonly services: readonly DryRunService[];
  /** `metallb-<node>` as it would stand (null: the speaker writes none) */
  readonly frrConfiguration: FRRConfiguration | null;
  /** this node's ServiceBGPStatus objects as they would stand, by service */
  readonly serviceBGPStatuses: readonly ServiceBGPStatus[];
  /** this node's ServiceL2Status objects as they would stand, by service */
  readonly serviceL2Statuses: readonly ServiceL2Status[];
  /** the Events it would emit on Services, in order */
  readonly events: ReadonlyArray<{ readonly service: string; readonly type: string; readonly reason: string; readonly message: string }>;
  /** the writes it would make against the state given, in order */
  readonly writes: readonly DryRunWrite[];
}

/** A StateSource that never changes. */
function fixedSource(state: ClusterState): StateSource {
  return { start: async () => {}, state: () => state, onChange: () => {}, stop: () => {} };
}

function fixedMembership(speakers: readonly string[] | null): Membership {
  return {
    start: async () => {},
    stop: async () => {},
    alive: () => (speakers === null ? null : [...speakers].sort()),
    onChange: () => {},
  };
}

function ownerOf(state: ClusterState, namespace: string, node: string, podName: string | undefined): OwnerRef | null {
  const pod: Pod | undefined = podName
    ? state.pods.find((p) => p.metadata?.name === podName && (p.metadata?.namespace ?? namespace) === namespace)
    : state.pods.find((p) => isSpeakerPod(p) && p.spec?.nodeName === node && (p.metadata?.namespace ?? namespace) === namespace);
  if (!pod?.metadata?.name) return podName ? { apiVersion: 'v1', kind: 'Pod', name: podName, uid: '' } : null;
  return { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, uid: String(pod.metadata.uid ?? '') };
}

/**
 * Runs the speaker of `opts.node` once over `state` and returns what it would write. Resolves
 * after every queued write (the FRRConfiguration's debounce included) has been recorded.
 */
export async function speakerDryRun(state: ClusterState, opts: SpeakerDryRunOptions): Promise<SpeakerDryRun> {
  const namespace = opts.namespace ?? 'metallb-system';
  const frrk8sNamespace = opts.frrk8sNamespace ?? namespace;
  const writes: DryRunWrite[] = [];
  const events: Array<{ service: string; type: string; reason: string; message: string }> = [];
  let created = 0;
  /** `obj` named as the API server would name it from its generateName (shown as `<generated>`). */
  const generated = <T extends KubeObject>(obj: T, unique: boolean): T => {
    const prefix = String(obj.metadata?.generateName ?? '');
    return { ...obj, metadata: { ...obj.metadata, name: `${prefix}<generated${unique ? `-${++created}` : ''}>` } };
  };
  const statusApi = <T extends KubeObject, B>(kind: 'ServiceBGPStatus' | 'ServiceL2Status'): StatusApi<T, B> => ({
    async create(ns, obj) {
      const made = generated(obj, true);
      writes.push({ verb: 'create', kind, namespace: ns, name: made.metadata!.name!, body: obj });
      return made;
    },
    async patchStatus(ns, name, status) {
      writes.push({ verb: 'patchStatus', kind, namespace: ns, name, body: { status } });
    },
    async delete(ns, name) {
      writes.push({ verb: 'delete', kind, namespace: ns, name });
    },
  });
  const frrApi: FRRConfigurationApi = {
    async get(ns, name) {
      return (state.frrConfigurations.find((f) => f.metadata?.name === name && f.metadata?.namespace === ns) as FRRConfiguration | undefined) ?? null;
    },
    async create(obj) {
      writes.push({ verb: 'create', kind: 'FRRConfiguration', namespace: obj.metadata.namespace, name: obj.metadata.name, body: obj });
      return obj;
    },
    async update(obj) {
      writes.push({ verb: 'update', kind: 'FRRConfiguration', namespace: obj.metadata.namespace, name: obj.metadata.name, body: obj });
      return obj;
    },
    async delete(ns, name) {
      writes.push({ verb: 'delete', kind: 'FRRConfiguration', namespace: ns, name });
    },
  };
  const owner = ownerOf(state, namespace, opts.node, opts.podName);
  const speaker = new Speaker({
    node: opts.node,
    namespace,
    frrk8sNamespace,
    bgpType: opts.bgpType ?? 'frr-k8s',
    source: fixedSource(state),
    membership: fixedMembership(opts.speakers ?? null),
    l2: { announce: () => {}, withdraw: () => {} },
    log: jsonLogger({ level: opts.logLevel ?? 'info', write: opts.log ?? (() => {}) }),
    metrics: speakerMetrics(),
    l2StatusApi: statusApi<ServiceL2Status, L2StatusBody>('ServiceL2Status'),
    bgpStatusApi: statusApi<ServiceBGPStatus, BGPStatusBody>('ServiceBGPStatus'),
    frrApi,
    event: (svc: Service, type, reason, message) => events.push({ service: namespacedName(svc), type, reason, message }),
    owner,
    ignoreExcludeLB: opts.ignoreExcludeLB === true,
    unannouncedEvents: opts.unannouncedEvents !== false,
    ...(opts.lbClass !== undefined ? { lbClass: opts.lbClass } : {}),
    frrDebounceMs: 0,
    // The ConfigurationState `speaker-<node>` the command would report (written only when it changes).
    configReported: (error) => {
      const { name } = configurationStateMeta({ speaker: opts.node });
      const status = configurationStateStatus('configReconcilerValid', error, '<now>');
      const current = state.configurationStates.find((c) => c.metadata?.name === name && c.metadata?.namespace === namespace);
      if (current?.status?.result === status.result && (current.status.errorSummary ?? '') === (status.errorSummary ?? '')) return;
      if (!current) writes.push({ verb: 'create', kind: 'ConfigurationState', namespace, name, body: newConfigurationState(namespace, { speaker: opts.node }, owner) });
      writes.push({ verb: 'patchStatus', kind: 'ConfigurationState', namespace, name, body: { status } });
    },
  });
  await speaker.start();
  await speaker.l2Status.idle();
  await speaker.bgpStatus.idle();
  await speaker.frr.flush();

  const c = speaker.configuration;
  const configuration: SpeakerDryRun['configuration'] =
    c === null || c.ok
      ? { accepted: true, droppedPeers: c?.droppedPeers ?? [], droppedBGPAdvertisements: c?.droppedBGPAdvertisements ?? [] }
      : { accepted: false, stage: c.stage, error: c.error.message, droppedPeers: c.droppedPeers, droppedBGPAdvertisements: c.droppedBGPAdvertisements };
  const peers = speaker.bgpPeersByService();
  const services: DryRunService[] = state.services
    .map((svc) => {
      const key = namespacedName(svc);
      const v = speaker.controller.verdict(key);
      return { service: key, bgp: v?.bgp ?? 'ignored', layer2: v?.layer2 ?? 'ignored', peers: [...(peers.get(key) ?? [])] };
    })
    .sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : 0));

  const serviceBGPStatuses: ServiceBGPStatus[] = [];
  const serviceL2Statuses: ServiceL2Status[] = [];
  for (const { service } of services) {
    const [serviceNamespace, serviceName] = [service.slice(0, service.indexOf('/')), service.slice(service.indexOf('/') + 1)];
    const bgp = desiredServiceBGPStatus({
      node: opts.node,
      namespace,
      serviceNamespace,
      serviceName,
      peers: peers.get(service) ?? [],
      owner,
      existing: state.serviceBGPStatuses,
    });
    if (bgp) serviceBGPStatuses.push(bgp.metadata?.name ? bgp : generated(bgp, false));
    const interfaces = speaker.controller.announcement(service)?.interfaces ?? null;
    if (interfaces !== null) {
      const status = desiredL2Status(opts.node, serviceNamespace, serviceName, interfaces);
      const mine = state.serviceL2Statuses.find(
        (s) => s.metadata?.labels?.[LABEL_ANNOUNCE_NODE] === opts.node && s.metadata?.labels?.[LABEL_SERVICE_NAME] === serviceName && s.metadata?.labels?.[LABEL_SERVICE_NAMESPACE] === serviceNamespace,
      );
      const base = mine ?? generated(planL2Status({ node: opts.node, namespace, serviceNamespace, serviceName, desired: interfaces, existing: [], owner }).create!, false);
      serviceL2Statuses.push({ ...base, status: { ...status } });
    }
  }
  const result: SpeakerDryRun = {
    node: opts.node,
    namespace,
    frrk8sNamespace,
    configuration,
    services,
    frrConfiguration: speaker.frr.current ?? null,
    serviceBGPStatuses,
    serviceL2Statuses,
    events,
    writes: [...writes],
  };
  await speaker.bgpStatus.stop();
  await speaker.l2Status.stop();
  await speaker.frr.stop();
  return result;
}

/**
 * The dry run with every BGP password replaced by `<retracted>` (MetalLB's ConfigToDump does the
 * same in its debug logs): in convert mode the FRRConfiguration carries the Secret's password in
 * clear text, which a terminal or a CI log must not show.
 */
export function redactPasswords(r: SpeakerDryRun): SpeakerDryRun {
  const redactFRR = (f: unknown): unknown => {
    const obj = f as FRRConfiguration | null | undefined;
    if (!obj?.spec?.bgp?.routers) return f;
    return {
      ...obj,
      spec: {
        ...obj.spec,
        bgp: {
          ...obj.spec.bgp,
          routers: obj.spec.bgp.routers.map((rt) => ({
            ...rt,
            ...(rt.neighbors ? { neighbors: rt.neighbors.map((n) => (n.password ? { ...n, password: '<retracted>' } : n)) } : {}),
          })),
        },
      },
    };
  };
  return {
    ...r,
    frrConfiguration: redactFRR(r.frrConfiguration) as FRRConfiguration | null,
    writes: r.writes.map((w) => (w.kind === 'FRRConfiguration' && w.body ? { ...w, body: redactFRR(w.body) } : w)),
  };
}
