/**
 * ConfigurationState (metallb.io/v1beta1), MetalLB v0.16.1's per-component report of whether its
 * configuration loaded (`internal/k8s/controllers/configuration_state_controller.go` and the
 * ConfigReconciler's `reportCondition`): one object per component in MetalLB's namespace,
 * `controller` or `speaker-<node>`, with one condition per reconciler and a summary `result`
 * (`Valid`, `Invalid`, `Unknown`) and `errorSummary`. `kubectl get configurationstates -n
 * metallb-system` then shows which speakers reject the configuration.
 */
import type { KubeObject } from './kube.ts';
import { METALLB_STATUS_API_VERSION, type OwnerRef } from './status.ts';

/** MetalLB's condition types. */
export type ConfigurationConditionType = 'configReconcilerValid' | 'poolReconcilerValid';

/** A condition as MetalLB writes it (`metav1.Condition`). */
export interface ConfigurationCondition {
  type: ConfigurationConditionType;
  status: 'True' | 'False';
  /** `Reconciled`, `ConfigurationError` or `UnknownError` */
  reason: string;
  message: string;
  /** RFC 3339 */
  lastTransitionTime: string;
}

/** `status` of a ConfigurationState. */
export interface ConfigurationStateStatus {
  conditions: ConfigurationCondition[];
  result: 'Valid' | 'Invalid' | 'Unknown';
  errorSummary?: string;
}

/** The object's name for a component (`controller`, `speaker-<node>`) and its labels. */
export function configurationStateMeta(component: { speaker: string } | 'controller'): { name: string; labels: Record<string, string> } {
  if (component === 'controller') return { name: 'controller', labels: { 'metallb.io/component-type': 'controller' } };
  return { name: `speaker-${component.speaker}`, labels: { 'metallb.io/component-type': 'speaker', 'metallb.io/node-name': component.speaker } };
}

/**
 * The status MetalLB reports after a configuration load: condition True/`Reconciled` when it
 * loaded, False/`ConfigurationError` with `configuration error: <error>` when it was rejected;
 * `result` Invalid with the error in `errorSummary`, else Valid.
 */
export function configurationStateStatus(type: ConfigurationConditionType, error: string | null, now: string): ConfigurationStateStatus {
  const condition: ConfigurationCondition =
    error === null
      ? { type, status: 'True', reason: 'Reconciled', message: '', lastTransitionTime: now }
      : { type, status: 'False', reason: 'ConfigurationError', message: `configuration error: ${error}`, lastTransitionTime: now };
  return error === null ? { conditions: [condition], result: 'Valid' } : { conditions: [condition], result: 'Invalid', errorSummary: condition.message };
}

/** A new ConfigurationState object (status is written separately, through the status subresource). */
export function newConfigurationState(namespace: string, component: { speaker: string } | 'controller', owner: OwnerRef | null): KubeObject {
  const { name, labels } = configurationStateMeta(component);
  return {
    apiVersion: METALLB_STATUS_API_VERSION,
    kind: 'ConfigurationState',
    metadata: { name, namespace, labels, ...(owner ? { ownerReferences: [{ ...owner }] } : {}) },
  };
}
