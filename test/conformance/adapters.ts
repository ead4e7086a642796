/** Every conformance adapter the runner knows, in the order they are asked. */
import type { SuiteAdapter } from './types.ts';
import { adapter as allocatorAdapter } from './allocator.ts';
import { adapter as controllerAdapter } from './controller.ts';
import { adapter as configAdapter } from './config.ts';
import { adapter as electionAdapter } from './election.ts';
import { adapter as bgpAdapter } from './bgp.ts';

export const adapters: SuiteAdapter[] = [allocatorAdapter, controllerAdapter, configAdapter, electionAdapter, bgpAdapter];
