/**
 * The repository's copy of the project's shared test data (MetalLB's behaviour as conformance
 * cases, its CRDs, sample configurations, the differential clusters), kept in test/shared/ so that a
 * clone with nothing beside it runs every test. The project's shared folder beside the repository,
 * when a maintainer has one, is the source it is refreshed from (`npm run shared:refresh`); `npm test`
 * reports a copy that differs from it (test/shared-check.ts) without failing.
 */
import { dirname, join } from 'node:path';

/** test/shared/ of this repository. */
export const SHARED_DIR: string = join(dirname(import.meta.dirname), 'shared');

/** A path below test/shared/ (`sharedPath('conformance', 'election')`). */
export function sharedPath(...parts: string[]): string {
  return join(SHARED_DIR, ...parts);
}
