/** Diagnostics over a cluster state: explain one Service, whois an address, and their shared context. */
export * from './explain.ts';
export * from './findings.ts';
export * from './whois.ts';
export * from './context.ts';
