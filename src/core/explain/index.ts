/** Diagnostics over a cluster state: explain one Service, whois an address, and their shared context. */
export * from './types.ts';
export * from './explain.ts';
export * from './findings.ts';
export * from './whois.ts';
export * from './context.ts';
export * from './speakers.ts';
export * from './bgp.ts';
export * from './bgp-traps.ts';
export * from './validate.ts';
