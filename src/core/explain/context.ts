/**
 * What the diagnostic commands (`explain`, `whois`, `allocate --dry-run`) compute once per
 * snapshot before answering: the effective configuration, the live-speaker list and where it came
 * from, the controller's dry run and the election index.
 */
import { parseConfig, resetTransient } from '../config/index.ts';
import type { Config } from '../config/types.ts';
import { allocateAll, type AllocateAllResult } from '../controller/index.ts';
import { aliveSpeakers, buildElectionIndex, type ElectionIndex } from '../election/index.ts';
import type { ClusterState } from '../kube.ts';
import type { SpeakersSource } from './explain.ts';

/** Options of diagnosticContext (the CLI's `--speakers` and `--ignore-exclude-lb`). */
export interface DiagnosticOptions {
  /** Node names with a live speaker (`--speakers`); absent: derived from the state. */
  readonly speakers?: readonly string[];
  readonly ignoreExcludeLB?: boolean;
}

/** Everything explainService / whoisIP need besides the Service or address. */
export interface DiagnosticContext {
  readonly state: ClusterState;
  readonly config: Config;
  readonly speakers: readonly string[] | null;
  readonly speakersSource: SpeakersSource;
  readonly ignoreExcludeLB: boolean;
  readonly dryRun: AllocateAllResult;
  readonly index: ElectionIndex;
}

/**
 * The configuration as the diagnostics use it: MetalLB's parser over the snapshot's CRs, after
 * clearing the references that may legitimately point at objects a snapshot often lacks (BGPPeer
 * password Secrets and BFDProfiles, Community aliases — MetalLB's webhook "transient" fields).
 * `validate` reports those references separately.
 * @throws ConfigError (exit 2) naming the object, for a configuration MetalLB would reject.
 */
export function diagnosticConfig(state: ClusterState): Config {
  return parseConfig({ ...state, bgpPeers: resetTransient(state.bgpPeers) });
}

/**
 * Builds the context once per snapshot. Speakers: `--speakers` when given; else the nodes whose
 * speaker pod is Ready when the snapshot has speaker pods; else every Node (as MetalLB with
 * memberlist disabled).
 * @throws ConfigError for a configuration MetalLB would reject.
 */
export function diagnosticContext(state: ClusterState, opts: DiagnosticOptions = {}): DiagnosticContext {
  const config = diagnosticConfig(state);
  let speakers: readonly string[] | null;
  let speakersSource: SpeakersSource;
  if (opts.speakers) {
    speakers = [...opts.speakers];
    speakersSource = 'flag';
  } else {
    speakers = aliveSpeakers(state);
    speakersSource = speakers ? 'speaker-pods' : 'all-nodes';
  }
  return {
    state, config, speakers, speakersSource, ignoreExcludeLB: opts.ignoreExcludeLB === true,
    dryRun: allocateAll(config, state.services),
    index: buildElectionIndex(state, speakers),
  };
}
