/**
 * Flag helpers shared by the long-running commands (`controller`, `speaker`), which run in a pod
 * as MetalLB's do.
 */
import { existsSync, readFileSync } from 'node:fs';
import { InvalidArgumentError } from 'commander';
import { DEFAULT_METALLB_NAMESPACE } from '../core/kube.ts';

/** Where a pod finds its own namespace. */
export const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/**
 * A `--…-port` value: 0–65535, 0 picks a free port.
 * @throws InvalidArgumentError (commander: exit 2) for anything else.
 */
export function portNumber(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535) throw new InvalidArgumentError('expected a port number 0-65535 (0 picks a free port).');
  return n;
}

/**
 * The namespace MetalLB runs in, as MetalLB finds it: `--namespace`, else METALLB_NAMESPACE, else
 * the pod's service-account namespace file, else `metallb-system`.
 */
export function metallbNamespaceOf(flag: string | undefined, env: NodeJS.ProcessEnv = process.env, saFile = SA_NAMESPACE_FILE): string {
  if (flag) return flag;
  if (env.METALLB_NAMESPACE) return env.METALLB_NAMESPACE;
  if (existsSync(saFile)) {
    const ns = readFileSync(saFile, 'utf8').trim();
    if (ns) return ns;
  }
  return DEFAULT_METALLB_NAMESPACE;
}
