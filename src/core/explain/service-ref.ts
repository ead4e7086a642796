/**
 * Which Service an `explain` target names: `svc/NAME`, `NAMESPACE/NAME` or `NAME` with `-n`, looked up in
 * a cluster state (naming the namespaces where a Service of that name exists when it is not
 * there), and its explanation. Pure.
 */
import type { ClusterState, Service } from '../kube.ts';
import { UserError } from '../errors.ts';
import { explainService as coreExplainService, type Explanation } from './explain.ts';
import type { DiagnosticContext } from './context.ts';

/** A service reference: `namespace/name`. */
export interface ServiceRef {
  namespace: string;
  name: string;
}

const KIND_PREFIXES = new Set(['svc', 'service', 'services']);

/**
 * Parses `svc/NAME`, `service/NAME`, `NS/NAME` or `NAME`; the namespace is `-n`, else the one in
 * the target, else `default`.
 * @throws UserError (exit 2) for an empty name, more than one `/` (beyond a `svc/` prefix), or a
 *   namespace in the target that contradicts `-n`.
 */
export function parseServiceTarget(target: string, namespace?: string): ServiceRef {
  const parts = target.split('/');
  if (parts.length > 1 && KIND_PREFIXES.has(parts[0]!.toLowerCase())) parts.shift();
  if (parts.length > 2 || parts.some((p) => p === '')) {
    throw new UserError(`invalid service "${target}": expected svc/NAME, NAMESPACE/NAME or NAME`);
  }
  const [nsInTarget, name] = parts.length === 2 ? [parts[0]!, parts[1]!] : [undefined, parts[0]!];
  if (nsInTarget !== undefined && namespace !== undefined && nsInTarget !== namespace) {
    throw new UserError(`service "${target}" names namespace ${nsInTarget} but -n says ${namespace}`);
  }
  return { namespace: nsInTarget ?? namespace ?? 'default', name };
}

/**
 * The Service `ref` names in `state`.
 * @throws UserError (exit 2) when it is not there; the message names the namespaces where a
 *   Service of that name exists (`exists in namespace shop: explain svc/web -n shop`).
 */
export function findService(state: ClusterState, ref: ServiceRef): Service {
  const svc = state.services.find((s) => s.metadata?.name === ref.name && (s.metadata?.namespace ?? 'default') === ref.namespace);
  if (svc) return svc;
  const elsewhere = [...new Set(state.services.filter((s) => s.metadata?.name === ref.name).map((s) => s.metadata?.namespace ?? 'default'))].sort();
  const hint =
    elsewhere.length === 0
      ? ''
      : `; a Service ${ref.name} exists in namespace${elsewhere.length === 1 ? '' : 's'} ${elsewhere.length <= 8 ? elsewhere.join(', ') : `${elsewhere.slice(0, 8).join(', ')} and ${elsewhere.length - 8} more`}: explain svc/${ref.name} -n ${elsewhere[0]}`;
  throw new UserError(`service ${ref.namespace}/${ref.name} not found in the cluster state${hint}`);
}

/**
 * Explains the Service `ref` names (core explainService over the diagnostic context); `-o json|yaml`
 * print the returned Explanation as is.
 * @throws UserError (exit 2) when the Service is not in the state.
 */
export function explainServiceRef(ctx: DiagnosticContext, ref: ServiceRef): Explanation {
  return coreExplainService({ ...ctx, service: findService(ctx.state, ref) });
}
