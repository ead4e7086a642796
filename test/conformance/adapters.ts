/** Every conformance adapter the runner knows, in the order they are asked. */
import type { SuiteAdapter } from './types.ts';

export const adapters: SuiteAdapter[] = [];
