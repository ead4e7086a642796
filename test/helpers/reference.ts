/**
 * The repository's reference test data: MetalLB v0.16.1's behaviour as conformance cases, its
 * CRDs, sample configurations and the differential clusters, kept in test/reference/ so that a
 * clone with nothing beside it runs every test. Maintainers refresh it from the project's shared
 * test data with `npm run reference:refresh -- DIR` and compare with `npm run reference:check -- DIR`.
 */
import { dirname, join } from 'node:path';

/** test/reference/ of this repository. */
export const REFERENCE_DIR: string = join(dirname(import.meta.dirname), 'reference');

/** A path below test/reference/ (`referencePath('conformance', 'election')`). */
export function referencePath(...parts: string[]): string {
  return join(REFERENCE_DIR, ...parts);
}
