/**
 * The version `metallb-ts --version` prints and the daemons log at start, with the MetalLB release
 * whose behaviour it follows. A module of its own so that the daemon commands read it without
 * importing the program that loads them.
 */
export const VERSION = '0.1.0 (MetalLB v0.16.1)';
