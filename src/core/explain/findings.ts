/**
 * Findings of `explain`: what is wrong (or surprising) about one Service's path from allocation to
 * announcement, each with a fix. Derived only from the decision objects in the explanation (the
 * allocator's dry-run outcome, the L2 election trace, the BGP evaluation) and the snapshot; they
 * never change a decision. This is where metallb-ts says what MetalLB leaves silent, e.g. an
 * L2Advertisement whose nodeSelectors pick only nodes carrying the exclusion label.
 */
import { diagnoseAllocation, diagnoseEvents, diagnoseOscillation, diagnoseReplacement, tiedChoicesText } from './allocation.ts';
import { serviceCheck, traceStep } from '../election/types.ts';
import { carriesExclusionLabel, EXCLUDE_LB_LABEL, SERVICE_NAME_LABEL, objectRef, type ClusterState } from '../kube.ts';
import { endpointCanServe } from '../election/endpoints.ts';
import { isSpeakerPod } from '../election/speakers.ts';
import type { Finding, Severity } from './types.ts';
import { componentText, disagreementText, groupReports } from './reported.ts';
import { ignoredInputFindings, withoutPoolAdvice } from './inputs.ts';
import { handManagedEndpoints } from './hand-endpoints.ts';
import { hazardFindings } from './hazards.ts';
import { rejectedEverywhere } from './speakers.ts';
import { list, nodesText, type FindingsInput } from './findings-input.ts';
import { announceFailedFindings, nodeAssignedEventFindings, statusFindings } from './findings-events.ts';
import { bgpFindings } from './findings-bgp.ts';

export type { FindingsInput } from './findings-input.ts';

/**
 * Why the speaker pods of the state are not Ready, grouped: `3 pods (on a, b, c) wait:
 * CreateContainerConfigError (secret "memberlist" not found)`; the first pod's name; whether the
 * memberlist Secret is what they wait for. Null without speaker pods.
 */
function speakerPodsDown(state: ClusterState): { text: string; first: string; memberlistSecret: boolean } | null {
  type Status = { ready?: boolean; restartCount?: number; state?: Record<string, { reason?: string; message?: string } | undefined>; lastState?: { terminated?: { reason?: string } } };
  const pods = state.pods.filter((p) => isSpeakerPod(p) && !(p.status?.conditions ?? []).some((c) => c?.type === 'Ready' && c.status === 'True'));
  if (pods.length === 0) return null;
  const groups = new Map<string, { one: string; many: string; nodes: string[] }>();
  for (const p of pods) {
    const st = ((p.status?.containerStatuses ?? []) as Status[]).find((c) => c && !c.ready);
    const waiting = st?.state?.waiting;
    const term = st?.state?.terminated ?? st?.lastState?.terminated;
    const restarts = st?.restartCount ? `, ${st.restartCount} restarts` : '';
    const unscheduled = (p.status?.conditions ?? []).find((c) => c?.type === 'PodScheduled' && c.status === 'False');
    // [singular, plural] of what the pods do.
    const [one, many] = waiting?.reason
      ? [`waits: ${waiting.reason}`, `wait: ${waiting.reason}`].map((v) => `${v}${waiting.message ? ` (${waiting.message})` : ''}${term?.reason ? `, last exit ${term.reason}` : ''}${restarts}`)
      : term?.reason
        ? [`exited: ${term.reason}${restarts}`, `exited: ${term.reason}${restarts}`]
        : unscheduled
          ? ['is not scheduled', 'are not scheduled'].map((v) => `${v}${unscheduled.reason ? ` (${unscheduled.reason}${unscheduled.message ? `: ${unscheduled.message}` : ''})` : ''}`)
          : [`is ${p.status?.phase ?? 'not Ready'}`, `are ${p.status?.phase ?? 'not Ready'}`];
    const g = groups.get(many!) ?? { one: one!, many: many!, nodes: [] };
    g.nodes.push(p.spec?.nodeName ?? p.metadata?.name ?? '');
    groups.set(many!, g);
  }
  const text = [...groups.values()].map((g) => (g.nodes.length === 1 ? `the speaker pod on ${g.nodes[0]} ${g.one}` : `${g.nodes.length} speaker pods on ${list(g.nodes, 4)} ${g.many}`)).join('; ');
  return { text, first: pods[0]!.metadata?.name ?? '', memberlistSecret: [...groups.keys()].some((w) => /secret "?memberlist"? not found/.test(w)) };
}

/** Labels kubeadm (and most installers) put on control-plane nodes. */
const CONTROL_PLANE_LABELS = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'];

/** Nodes hosting a usable (ready, or serving) endpoint of the Service. */
function usableEndpointNodes(f: FindingsInput): Set<string> {
  const [ns, name] = f.service.split('/');
  const out = new Set<string>();
  for (const slice of f.state.endpointSlices) {
    if (slice.metadata?.namespace !== ns || slice.metadata?.labels?.[SERVICE_NAME_LABEL] !== name) continue;
    for (const ep of slice.endpoints ?? []) if (ep?.nodeName && endpointCanServe(ep)) out.add(ep.nodeName);
  }
  return out;
}

function allocationFindings(f: FindingsInput, out: Finding[]): void {
  const a = f.allocation;
  const svc = f.serviceObject;
  if (a.status === 'ignored') {
    if (svc.spec?.type !== 'LoadBalancer') {
      out.push({ id: 'not-load-balancer', severity: 'error', message: a.reason ?? 'not a LoadBalancer Service', fix: 'set spec.type: LoadBalancer if MetalLB should give it an address' });
    } else {
      out.push({
        id: 'other-load-balancer-class',
        severity: 'error',
        message: a.reason ?? 'another loadBalancerClass',
        fix: 'if MetalLB should handle it: recreate the Service with the class MetalLB runs with (spec.loadBalancerClass is immutable), or explain with --lb-class set to the class your MetalLB uses',
      });
    }
    return;
  }
  const dry = a.dryRun;
  if (a.status === 'predicted') {
    out.push({
      id: 'ip-predicted',
      severity: 'info',
      message: `the Service has no address in its status yet; explaining with ${list(a.ips)} from pool ${a.pool}, the address the allocator would give it`,
      fix: 'none needed; if the controller is running and the status stays empty, check its logs and the Service events',
    });
  }
  if (!svc.spec?.clusterIP && !(svc.spec?.clusterIPs ?? []).length) {
    out.push({
      id: 'no-cluster-ip',
      severity: 'error',
      message: 'the Service has no spec.clusterIP / clusterIPs (the API server always sets them: the snapshot looks trimmed); MetalLB\'s controller clears the addresses of such a Service ("No ClusterIPs")',
      fix: 'take the snapshot with `kubectl get services -o yaml` unedited, or add spec.clusterIP to the manifest',
    });
    return;
  }
  const d = dry
    ? { service: svc, key: f.service, outcome: dry, config: f.controllerConfig, pools: f.dryRunPools, metallbNamespace: f.metallbNamespace, ignoredObjects: f.ignoredObjects, services: f.state.services }
    : null;
  if (a.status === 'pending' || (a.status === 'assigned' && dry?.error)) {
    const diagnosis = d ? diagnoseAllocation(d) : null;
    if (diagnosis) out.push(diagnosis);
    else if (a.status === 'pending') {
      out.push({
        id: 'allocation-failed',
        severity: 'error',
        message: `the controller gives the Service no address: ${a.reason ?? 'no reason reported'}`,
        fix: `compare with the Service's events (kubectl describe service -n ${svc.metadata?.namespace ?? 'default'} ${svc.metadata?.name ?? ''}) and the controller's log`,
      });
    }
    if (a.status === 'assigned') {
      out.push({
        id: 'status-ip-not-kept',
        severity: 'warning',
        message: `the address in the status (${list(a.ips)}) would not be kept by MetalLB's controller: ${dry?.error}`,
        fix: diagnosis ? `to keep it: ${diagnosis.fix}` : 'make the pools and annotations allow this address again, or let the controller re-allocate',
      });
    }
  }
  if (d) {
    out.push(...diagnoseEvents(d).filter((x) => !out.some((y) => y.id === x.id)));
    const replaced = a.status === 'assigned' ? diagnoseReplacement(d, a.ips) : null;
    if (replaced && !out.some((y) => y.id === replaced.id)) out.push(replaced);
    const oscillation = diagnoseOscillation(d);
    if (oscillation) out.push(oscillation);
  }
  if (f.passLimit !== null) {
    out.push({
      id: 'allocation-pass-limit',
      severity: 'warning',
      message: `the controller's dry run stopped after ${f.passLimit} pass${f.passLimit === 1 ? '' : 'es'} while a Service still asked MetalLB to reprocess every Service; MetalLB keeps going (with a growing backoff), so ${a.ips.length ? `${list(a.ips)} may not be the address it ends with` : 'the outcome shown may not be where it ends'}`,
      fix: 'run `metallb-ts allocate --dry-run -o wide` to see which Services never settle (MESSAGE "never settles") and fix those first',
    });
  }
  if (dry?.nondeterministic) {
    const tied = d ? tiedChoicesText(d) : null;
    out.push({
      id: 'allocation-nondeterministic',
      severity: 'info',
      message: tied ? `${tied}; ${dry.nondeterministic}` : `MetalLB may choose differently: ${dry.nondeterministic}`,
      fix: 'pin the choice with metallb.io/address-pool, metallb.io/loadBalancerIPs or serviceAllocation.priority',
    });
  }
}

function l2Findings(f: FindingsInput, out: Finding[]): void {
  const l2 = f.l2;
  if (!l2) return;
  if (l2.serviceReason === 'ipNotAllowed') {
    const elsewhere = f.ignoredObjects.filter((o) => o.kind === 'IPAddressPool').map(objectRef);
    out.push({
      id: 'ip-not-in-pool',
      severity: 'error',
      message: `no single IPAddressPool contains ${list(l2.ips)}: every speaker withdraws it (ipNotAllowed)` + (elsewhere.length ? `; MetalLB ignores the pools outside its namespace (${list(elsewhere)})` : ''),
      fix: elsewhere.length ? "move the IPAddressPool into MetalLB's namespace" : 'add the address to an IPAddressPool, or remove it from the Service so the controller allocates a pooled one',
    });
    return;
  }
  const endpointCheck = serviceCheck(l2.checks, 'endpoints');
  if (endpointCheck && !endpointCheck.ok) {
    const [ns, name] = f.service.split('/');
    // Which case: no slice (selector matches no pod, or none yet), or endpoints that are not ready.
    const slices = f.state.endpointSlices.filter((x) => (x.metadata?.namespace ?? 'default') === ns && x.metadata?.labels?.[SERVICE_NAME_LABEL] === name);
    const eps = slices.flatMap((x) => x.endpoints ?? []);
    const sel = Object.entries(f.serviceObject.spec?.selector ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const where = [...new Set(eps.map((e) => e?.nodeName).filter((n): n is string => !!n))].sort();
    const detail =
      eps.length > 0
        ? `: ${eps.length === 1 ? 'its one endpoint' : eps.length === 2 ? 'both of its endpoints' : `all ${eps.length} of its endpoints`}${where.length ? ` (on ${list(where, 4)})` : ''} ${eps.length === 1 ? 'is' : 'are'} neither ready nor serving`
        : slices.length > 0
          ? `: its EndpointSlices list no endpoint (no pod ${sel ? `matching its selector ${sel} ` : ''}is running)`
          : f.state.endpointSlices.length > 0
            ? ': the snapshot has no EndpointSlice for it'
            : '';
    const pods = `kubectl get pods -n ${ns}${sel ? ` -l ${sel}` : ''} -o wide`;
    out.push({
      id: 'no-ready-endpoints',
      severity: 'error',
      message: `the Service has no ready or serving endpoint, so no speaker announces it (every node: notOwner)${detail}`,
      fix:
        eps.length > 0
          ? `find why the pods are not ready (${pods}; kubectl describe pod shows the failing readiness probe)`
          : `check that the Service's selector matches running pods (${pods}), and that they pass their readiness probes (kubectl get endpointslices -n ${ns} -l kubernetes.io/service-name=${name})`,
    });
    return;
  }
  if (l2.serviceReason) return;
  const pool = f.pool;
  if (!pool) return;
  if (f.mode === 'none') {
    // Advertisements applied without metadata.namespace land in the kubectl context's namespace.
    const elsewhere = f.ignoredObjects.filter((o) => o.kind === 'L2Advertisement' || o.kind === 'BGPAdvertisement');
    const where = [...new Set(elsewhere.map((o) => o.metadata?.namespace ?? ''))].sort();
    out.push({
      id: 'no-advertisement',
      severity: 'error',
      message:
        `pool ${pool.name} has no L2Advertisement or BGPAdvertisement in ${f.metallbNamespace}: nobody announces its addresses`
        + (elsewhere.length ? `; ${list(elsewhere.map(objectRef), 4)} ${elsewhere.length === 1 ? 'is' : 'are'} in namespace ${list(where)}, which MetalLB never reads` : ''),
      fix: elsewhere.length
        ? `create ${elsewhere.length === 1 ? 'it' : 'them'} in ${f.metallbNamespace} instead (metadata.namespace: ${f.metallbNamespace} in the manifests, kubectl apply, then delete the cop${elsewhere.length === 1 ? 'y' : 'ies'} in ${list(where)})`
        : `create an L2Advertisement in ${f.metallbNamespace} with ipAddressPools: [${pool.name}] (or without ipAddressPools to cover every pool)`,
    });
    return;
  }
  if (pool.l2Advertisements.length === 0) return;
  if (l2.advertisements.length === 0) {
    out.push({
      id: 'no-advertisement',
      severity: 'error',
      message: `none of pool ${pool.name}'s L2Advertisements (${list(pool.l2Advertisements.map((a) => a.name))}) selects this Service by its serviceSelectors`,
      fix: 'add the labels the serviceSelectors expect to the Service, or widen the serviceSelectors',
    });
    return;
  }
  const ads = pool.l2Advertisements.filter((a) => l2.advertisements.includes(a.name));
  const selected = new Set<string>();
  for (const ad of ads) for (const n of ad.nodes) selected.add(n);
  const byName = new Map(f.state.nodes.map((n) => [n.metadata?.name ?? '', n]));
  const excluded = [...selected].filter((n) => carriesExclusionLabel(byName.get(n)));
  if (selected.size === 0) {
    out.push({
      id: 'advertisement-selects-no-node',
      severity: 'error',
      message: `the L2Advertisements for this Service (${list(l2.advertisements)}) select no node by their nodeSelectors`,
      fix: 'fix the nodeSelectors so they match node labels (kubectl get nodes --show-labels)',
    });
  } else if (excluded.length === selected.size && !f.ignoreExcludeLB) {
    out.push({
      id: 'nodeselector-only-excluded',
      severity: 'error',
      message: `the nodeSelectors of ${list(l2.advertisements)} select only ${list(excluded)}, and every one of them carries ${EXCLUDE_LB_LABEL}: nobody announces (MetalLB only logs this at debug level)`,
      fix: `select nodes without that label, or remove the label from the nodes (kubectl label node NODE ${EXCLUDE_LB_LABEL}-), or run the speakers with --ignore-exclude-lb`,
    });
  }
  const exclStep = traceStep(l2, 'excludeLB');
  const emptyValued = (exclStep?.dropped ?? []).map((d) => d.node).filter((n) => byName.get(n)?.metadata?.labels?.[EXCLUDE_LB_LABEL] === '' && selected.has(n));
  if (emptyValued.length > 0) {
    // kubeadm puts the label, empty, on every control-plane node: meant there, unless nobody else is left.
    const controlPlane = (n: string): boolean => CONTROL_PLANE_LABELS.some((l) => Object.hasOwn(byName.get(n)?.metadata?.labels ?? {}, l));
    const kubeadm = emptyValued.every(controlPlane) && l2.candidates.length > 0;
    const them = emptyValued.length === 1 ? 'it' : 'they';
    out.push({
      id: 'exclusion-label-empty-value',
      severity: kubeadm ? 'info' : 'warning',
      message: kubeadm
        ? `${list(emptyValued)} (control plane) ${emptyValued.length === 1 ? 'carries' : 'carry'} ${EXCLUDE_LB_LABEL}, empty, as kubeadm sets it on control-plane nodes: ${them} never announce${emptyValued.length === 1 ? 's' : ''} (MetalLB checks the key only)`
        : `${list(emptyValued)} ${emptyValued.length === 1 ? 'carries' : 'carry'} ${EXCLUDE_LB_LABEL} with an empty value: MetalLB checks the key only, so ${emptyValued.length === 1 ? 'it is' : 'they are'} excluded, yet \`kubectl get nodes -L ${EXCLUDE_LB_LABEL}\` shows an empty column`,
      fix: `if these nodes should announce: kubectl label node ${emptyValued[0]} ${EXCLUDE_LB_LABEL}-${kubeadm ? ' (none needed if the control plane should not take Service traffic)' : ''}`,
    });
  }
  const speakersStep = traceStep(l2, 'speakers');
  const unknown = (f.speakers.nodes ?? []).filter((n) => !byName.has(n));
  if (unknown.length > 0) {
    out.push({
      id: 'unknown-speaker-nodes',
      severity: 'warning',
      message: `${f.speakers.source === 'flag' ? '--speakers names' : f.speakers.source === 'memberlist' ? "the speaker's memberlist has members" : 'speaker pods run on'} ${list(unknown)}, which ${unknown.length === 1 ? 'is not a Node' : 'are not Nodes'} in the snapshot`,
      fix:
        f.speakers.source === 'flag'
          ? 'use node names as `kubectl get nodes` shows them'
          : f.speakers.source === 'memberlist'
            ? 'memberlist members are named after their node (--node-name): a deleted Node, or a speaker started with the wrong node name'
            : 'the snapshot may lack some Node objects: include `kubectl get nodes -o yaml`',
    });
  }
  if (speakersStep?.kept.every((n) => !byName.has(n))) {
    const down = f.speakers.source === 'speaker-pods' ? speakerPodsDown(f.state) : null;
    out.push({
      id: 'no-live-speakers',
      severity: 'error',
      message:
        f.speakers.source === 'flag'
          ? 'none of the nodes given with --speakers is a Node with a speaker'
          : f.speakers.source === 'memberlist'
            ? 'no Node has a speaker that memberlist considers alive'
            : `no speaker pod is Ready on any node${down?.text ? `: ${down.text}` : ''}`,
      fix: down?.memberlistSecret
        ? `MetalLB's controller creates the memberlist Secret at start-up (--ml-secret-name): check that it runs (kubectl -n ${f.metallbNamespace} get pods), `
          + `or create it: kubectl create secret generic memberlist -n ${f.metallbNamespace} --from-literal=secretkey="$(openssl rand -base64 128)"`
        : down?.first
          ? `read why: kubectl -n ${f.metallbNamespace} describe pod ${down.first}, and its logs`
          : `check the speaker DaemonSet (kubectl -n ${f.metallbNamespace} get daemonsets,pods)`,
    });
  }
  const netStep = traceStep(l2, 'networkUnavailable');
  const netDropped = (netStep?.dropped ?? []).map((d) => d.node).filter((n) => selected.has(n));
  if (netDropped.length > 0) {
    out.push({
      id: 'network-unavailable',
      severity: 'warning',
      message: `${list(netDropped)} ${netDropped.length === 1 ? 'has' : 'have'} condition NetworkUnavailable=True and cannot announce`,
      fix: 'check the CNI on those nodes',
    });
  }
  const localStep = traceStep(l2, 'localEndpoints');
  if (localStep && localStep.kept.length === 0 && localStep.dropped.length > 0) {
    // Where the endpoints are, and why those nodes were no candidates.
    const endpointNodes = [...usableEndpointNodes(f)].sort();
    const why = endpointNodes.map((n) => {
      const step = l2.trace.find((t) => t.dropped.some((d) => d.node === n));
      const d = step?.dropped.find((x) => x.node === n);
      return d ? `${n} (${d.why})` : `${n} (${byName.has(n) ? 'no live speaker' : 'not a Node in the snapshot'})`;
    });
    const excludedHosts = endpointNodes.filter((n) => exclStep?.dropped.some((d) => d.node === n));
    const excludedHost = excludedHosts.length > 0;
    const kubeadm = excludedHosts.every((n) => CONTROL_PLANE_LABELS.some((l) => Object.hasOwn(byName.get(n)?.metadata?.labels ?? {}, l)));
    out.push({
      id: 'local-no-endpoint-on-candidate',
      severity: 'error',
      message: `externalTrafficPolicy is Local, and none of the candidate nodes (${list(localStep.dropped.map((d) => d.node))}) runs a ready endpoint of the Service${why.length ? `; the endpoints run on ${why.join(', ')}` : ''}`,
      fix: excludedHost
        ? `${list(excludedHosts)} may not announce (${EXCLUDE_LB_LABEL}${kubeadm ? ', which kubeadm puts on control-plane nodes' : ''}): remove the label (kubectl label node ${excludedHosts[0]} ${EXCLUDE_LB_LABEL}-), `
          + `run the speakers with --ignore-exclude-lb (Helm: speaker.ignoreExcludeLB=true), schedule the pods on ${list(
            localStep.dropped.map((d) => d.node),
            3,
          )} too, or use externalTrafficPolicy: Cluster`
        : 'schedule the pods on the advertised nodes (nodeSelector/affinity), widen the L2Advertisement nodeSelectors, or use externalTrafficPolicy: Cluster',
    });
  }
  statusFindings(f, out);
  nodeAssignedEventFindings(f, out);
  announceFailedFindings(f, out);
}

/**
 * Which speakers reject their configuration, and what that does to this Service: every speaker
 * (`config-rejected`: none applies it, the snapshot cannot show what they run, the fix hint when
 * known) or some (`config-rejected-on-nodes`, an error when the L2 hash winner is one of them:
 * then nobody announces).
 */
function configFindings(f: FindingsInput, out: Finding[]): void {
  if (f.allocation.status !== 'ignored' && !f.speakerConfigs.groups.some((g) => g.status !== 'noNode')) {
    out.push({
      id: 'no-nodes',
      severity: 'error',
      message: 'the snapshot has no Node object: a MetalLB speaker builds its configuration from its own Node ("failed to get node" otherwise), so no speaker announces anything',
      fix: 'include the Nodes in the snapshot (kubectl get nodes -o yaml, or metallb-ts snapshot)',
    });
    return;
  }
  const rejected = f.speakerConfigs.groups.filter((g) => g.status === 'rejected');
  if (rejected.length === 0) return;
  const total = f.speakerConfigs.groups.filter((g) => g.status !== 'noNode').reduce((n, g) => n + g.nodes.length, 0);
  const byError = new Map<string, { nodes: string[]; object: string | undefined }>();
  for (const g of rejected) {
    if (g.result.ok) continue;
    const e = byError.get(g.result.error.message) ?? { nodes: [], object: g.result.error.object };
    e.nodes.push(...g.nodes);
    byError.set(g.result.error.message, e);
  }
  const reportsOf = (nodes: readonly string[]): string => {
    const set = new Set(nodes);
    const agreeing = f.configuration.reported.filter((r) => r.component === 'speaker' && set.has(r.node ?? '') && r.agreement === 'agrees' && r.result === 'Invalid');
    if (agreeing.length === 0) return '';
    return agreeing.length === set.size
      ? ` (${agreeing.length === 1 ? `its ConfigurationState ${agreeing[0]!.name} says so too` : 'their ConfigurationStates say so too'}: Invalid)`
      : ` (the ConfigurationStates of ${list(
          agreeing.map((r) => r.node ?? ''),
          8,
        )} say so too: Invalid)`;
  };
  const noSecrets = !f.state.secrets.some((x) => !x.metadata?.namespace || x.metadata.namespace === f.metallbNamespace);
  const fixOf = (object: string | undefined, error: string): string =>
    `correct ${object ?? 'the configuration'} (\`metallb-ts validate\` lists every error and which speakers reject it)`
    + (noSecrets && /passwordSecret/.test(error)
      ? `; the snapshot holds no Secret of ${f.metallbNamespace} at all: if it was taken without them, add \`kubectl get secrets -n ${f.metallbNamespace} -o yaml\` (or use \`metallb-ts snapshot\`)`
      : '');
  if (rejectedEverywhere(f.speakerConfigs)) {
    const errors = [...byError].map(([error, e]) => (byError.size === 1 ? error : `${error} (speakers of ${nodesText(e.nodes, total)})`));
    const hint = f.ifFixed
      ? `; once fixed (${f.ifFixed.assuming}): ${f.ifFixed.announcer ? `${f.ifFixed.announcer} would announce it` : f.ifFixed.bgpAnnouncers.length ? `${list(f.ifFixed.bgpAnnouncers)} would advertise it over BGP` : 'still nobody would announce it (see `explain` after the fix)'}`
      : '';
    out.push({
      id: 'config-rejected',
      severity: 'error',
      message: `every speaker rejects the configuration: ${errors.join('; ')}${reportsOf([...byError.values()].flatMap((e) => e.nodes))}. None applies it: each keeps running the configuration it accepted last, which a snapshot cannot show, so who announces the Service now cannot be told from here`,
      fix: `${fixOf([...byError.values()][0]?.object, [...byError.keys()][0] ?? '')}${hint}`,
    });
    return;
  }
  for (const [error, e] of byError) {
    const winner = f.hashWinner !== null && e.nodes.includes(f.hashWinner) ? f.hashWinner : null;
    const ip = f.l2?.hashedIP;
    out.push({
      id: 'config-rejected-on-nodes',
      severity: winner ? 'error' : 'warning',
      message:
        `the speaker${e.nodes.length === 1 ? '' : 's'} of ${list(e.nodes)} (${e.nodes.length} of ${total} node${total === 1 ? '' : 's'}) reject${e.nodes.length === 1 ? 's' : ''} the configuration: ${error}${reportsOf(e.nodes)}; ${e.nodes.length === 1 ? 'it keeps' : 'they keep'} running the configuration ${e.nodes.length === 1 ? 'it' : 'they'} accepted last (a snapshot cannot show it), while the other speakers run this one`
        + (winner ? `. ${winner} is first in the hash order of ${ip} but announces nothing new, and the other candidates do not announce because they are not first: nobody answers for ${ip}` : ''),
      fix: fixOf(e.object, error),
    });
  }
}

/**
 * The components' own reports (ConfigurationState) against what the snapshot's configuration makes
 * them do: a `configuration-state-disagrees` warning per group of components saying the same thing
 * (the decisions shown assume they run the snapshot's configuration, which they say they do not).
 */
function reportedFindings(f: FindingsInput, out: Finding[]): void {
  const off = f.configuration.reported.filter((r) => r.agreement === 'disagrees' || r.agreement === 'otherError');
  for (const g of groupReports(off)) {
    const r = g[0]!;
    const objects = g.map((x) => x.name);
    out.push({
      id: 'configuration-state-disagrees',
      severity: 'warning',
      message: `${disagreementText(g)}; the decisions here are made with the snapshot's configuration${g.some((x) => x.component === 'speaker' && x.node === f.announcer) ? ` (${f.announcer} is the announcer here)` : ''}`,
      fix: `take a fresh snapshot (metallb-ts snapshot) or explain live; if it persists, read ${componentText(r)}'s log and \`kubectl get configurationstate -n ${f.metallbNamespace} ${objects.length === 1 ? objects[0] : objects.slice(0, 3).join(' ')} -o yaml\``,
    });
  }
}

/** Computes the findings of an explanation, most severe first (stable within a severity). */
export function findingsFor(f: FindingsInput): Finding[] {
  // Inputs MetalLB ignores first (inputs.ts): a misspelled request or another implementation's
  // address is the cause of what follows; then the allocation: a Service without an address is
  // pending whatever the speakers run.
  const out: Finding[] = ignoredInputFindings(f);
  allocationFindings(f, out);
  configFindings(f, out);
  reportedFindings(f, out);
  if (f.allocation.status !== 'ignored' && f.allocation.ips.length > 0) {
    l2Findings(f, out);
    bgpFindings(f, out);
  }
  // Dangerous configurations MetalLB accepts (hazards.ts): the Service's pool, its interfaces.
  const selecting = f.l2 && f.pool ? f.pool.l2Advertisements.filter((a) => f.l2!.advertisements.includes(a.name)) : undefined;
  out.push(...hazardFindings({ ...f, poolName: f.l2?.pool ?? f.bgp?.pool ?? null, l2Advertisements: selecting }));
  const rank: Record<Severity, number> = { error: 0, warning: 1, info: 2 };
  return handManagedEndpoints(f.serviceObject, f.state, withoutPoolAdvice(out))
    .map((x, i) => [x, i] as const)
    .sort((a, b) => rank[a[0].severity] - rank[b[0].severity] || a[1] - b[1])
    .map(([x]) => x);
}
