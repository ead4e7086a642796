/**
 * The controller's pure side (MetalLB's controller/service.go + main.go): per-service reconcile,
 * the Service fields it reads, and the whole-snapshot dry run `allocateAll`.
 */
export * from './service.ts';
export * from './reconcile.ts';
export * from './allocate-all.ts';
export * from './write-history.ts';
