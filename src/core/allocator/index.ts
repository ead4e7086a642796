/**
 * The IP allocator (MetalLB's `internal/allocator`): pools, address index, sharing rules, pool
 * selection. Pure and deterministic; see allocator.ts for the index design.
 */
export { Allocator, familyOfIPs, poolCapacity, poolCompatibility, MAX_INT64, NIL_IP } from './allocator.ts';
export { AllocationError, failureMessage, explainFailure, refusalText, quoteList } from './errors.ts';
export type {
  AllocRequest,
  AllocationFailure,
  AllocationResult,
  Capacity,
  Family,
  IPFamilyPolicy,
  Port,
  PoolAttempt,
  PoolCounters,
  PoolRefusal,
  SharingConflict,
} from './types.ts';
