/**
 * `metallb-ts members [--speaker HOST:PORT]`: the memberlist view of one running speaker, read from
 * `GET /debug/members` on its metrics port. Without `--speaker` it finds one as `explain` does:
 * a Running speaker pod (`--speaker-selector`, default `component=speaker`, in
 * `--metallb-namespace`; `--node NODE` for that node's speaker; Ready pods first) read through the
 * API server's pod proxy with the kubeconfig's credentials (`--kubeconfig`, `--context`).
 * Table (src/render/members.ts): NAME ADDRESS STATE INCARNATION (wide adds PORT), after a line naming the pod when it was
 * discovered. With memberlist off the speaker counts every Node: the table lists them as alive.
 * Exit 0, 2 for bad input, 3 when no speaker can be reached or it answers with an error.
 * Only node's own http here (the CLI loads every command file at start); the Kubernetes client
 * is loaded for discovery only.
 */
import type { Command } from 'commander';
import { UserError } from '../core/errors.ts';
import { DEFAULT_METALLB_NAMESPACE } from '../core/kube.ts';
import { fetchMembers, type MembersView, type SpeakerViewOrigin } from '../kube/speaker-view.ts';
import { discoverMembers } from '../kube/members-discovery.ts';
import { addClusterOptions, addOutputOption, addSpeakerViewOption, checkSpeakerViewOptions, type SpeakerViewOptions } from './options.ts';
import type { OutputFormat } from '../render/output.ts';

export { speakerURL, type MembersView } from '../kube/speaker-view.ts';

interface MembersOptions extends SpeakerViewOptions {
  output: OutputFormat;
  node?: string;
  kubeconfig?: string;
  context?: string;
  metallbNamespace?: string;
}

/**
 * The view `members` prints: `--speaker` directly, else discovered through the API server.
 * @throws UserError (exit 2) for a bad `--speaker`, `--speaker-selector` or kubeconfig, or `--node`
 *   or `--speaker-selector` with `--speaker`; UserError (exit 3) when no speaker answers (the reason
 *   names the pods tried, grouped by error); ClusterUnreachableError (exit 3) when the API server
 *   cannot be reached or forbids listing pods (`cannot list v1 pods at SERVER: ...`).
 */
export async function membersView(opts: MembersOptions): Promise<{ view: MembersView; from?: SpeakerViewOrigin }> {
  if (opts.speaker !== undefined) {
    if (opts.node !== undefined) throw new UserError('--node picks a speaker pod to ask through the API server, --speaker names one directly: give one or the other');
    checkSpeakerViewOptions(opts);
    return { view: await fetchMembers(opts.speaker) };
  }
  return discoverMembers({
    ...(opts.kubeconfig !== undefined ? { kubeconfig: opts.kubeconfig } : {}),
    ...(opts.context !== undefined ? { context: opts.context } : {}),
    namespace: opts.metallbNamespace ?? DEFAULT_METALLB_NAMESPACE,
    ...(opts.speakerSelector !== undefined ? { selector: opts.speakerSelector } : {}),
    ...(opts.node !== undefined ? { node: opts.node } : {}),
    onSlow: (m) => process.stderr.write(`metallb-ts: ${m}\n`),
  });
}

/** Registers `members` on `program`. */
export function registerMembers(program: Command): void {
  const cmd = program
    .command('members')
    .description("print a running speaker's memberlist view (from its metrics port; without --speaker, a speaker pod through the API server)")
    .option('--node <node>', 'ask the speaker pod on this node (discovery only)')
    .addHelpText(
      'after',
      '\nExamples:\n  metallb-ts members                       # a speaker pod of the current kubeconfig context\n  metallb-ts members --node worker-1 -o wide\n  metallb-ts members --speaker 10.0.0.5:9120 -o json',
    );
  addSpeakerViewOption(cmd, false);
  addClusterOptions(cmd);
  addOutputOption(cmd);
  cmd.action(async (opts: MembersOptions) => {
    const { view, from } = await membersView(opts);
    const [{ writeResult }, { membersTable }] = await Promise.all([import('../render/output.ts'), import('../render/members.ts')]);
    writeResult(opts.output, view, (wide) => membersTable(view, wide, from));
  });
}
