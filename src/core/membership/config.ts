/**
 * memberlist's timing configuration (config.go DefaultLANConfig / DefaultWANConfig, v0.5.1).
 * All durations in milliseconds, sizes in bytes.
 */
export interface MemberlistConfig {
  readonly probeIntervalMs: number;
  readonly probeTimeoutMs: number;
  readonly indirectChecks: number;
  readonly suspicionMult: number;
  readonly suspicionMaxTimeoutMult: number;
  readonly awarenessMaxMultiplier: number;
  readonly gossipIntervalMs: number;
  readonly gossipNodes: number;
  readonly gossipToTheDeadTimeMs: number;
  readonly retransmitMult: number;
  readonly pushPullIntervalMs: number;
  readonly tcpTimeoutMs: number;
  readonly udpBufferSize: number;
  readonly disableTcpPings: boolean;
  /** 0 = a dead member's name is never reclaimed by another address. */
  readonly deadNodeReclaimTimeMs: number;
  readonly enableCompression: boolean;
  readonly gossipVerifyIncoming: boolean;
  readonly gossipVerifyOutgoing: boolean;
}

/** DefaultLANConfig (what MetalLB uses without --ml-wan-config). */
export const LAN_CONFIG: MemberlistConfig = {
  probeIntervalMs: 1000,
  probeTimeoutMs: 500,
  indirectChecks: 3,
  suspicionMult: 4,
  suspicionMaxTimeoutMult: 6,
  awarenessMaxMultiplier: 8,
  gossipIntervalMs: 200,
  gossipNodes: 3,
  gossipToTheDeadTimeMs: 30_000,
  retransmitMult: 4,
  pushPullIntervalMs: 30_000,
  tcpTimeoutMs: 10_000,
  udpBufferSize: 1400,
  disableTcpPings: false,
  deadNodeReclaimTimeMs: 0,
  enableCompression: true,
  gossipVerifyIncoming: true,
  gossipVerifyOutgoing: true,
};

/** DefaultWANConfig (--ml-wan-config). */
export const WAN_CONFIG: MemberlistConfig = {
  ...LAN_CONFIG,
  tcpTimeoutMs: 30_000,
  suspicionMult: 6,
  pushPullIntervalMs: 60_000,
  probeTimeoutMs: 3000,
  probeIntervalMs: 5000,
  gossipNodes: 4,
  gossipIntervalMs: 500,
  gossipToTheDeadTimeMs: 60_000,
};
