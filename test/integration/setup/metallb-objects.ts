import type { CustomObjectsApi } from '@kubernetes/client-node';

const PLURALS = { IPAddressPool: 'ipaddresspools', L2Advertisement: 'l2advertisements' } as const;

/**
 * Creates one metallb.io/v1beta1 object (`kind` named `name` with `spec`) in `namespace`
 * (default metallb-system) through the API server; rejects with the API's error.
 */
export async function createMetalLBObject(custom: CustomObjectsApi, kind: keyof typeof PLURALS, name: string, spec: object, namespace = 'metallb-system'): Promise<void> {
  await custom.createNamespacedCustomObject({
    group: 'metallb.io',
    version: 'v1beta1',
    namespace,
    plural: PLURALS[kind],
    body: { apiVersion: 'metallb.io/v1beta1', kind, metadata: { name }, spec },
  });
}
