/**
 * Membership without memberlist: MetalLB v0.16.1 with memberlist disabled (no `--ml-bindaddr` /
 * `--ml-labels`) treats every Node object as having a live speaker. Node objects reach the
 * speaker through the cluster watch (a Node change resyncs every service there), so this member
 * has nothing of its own to report: `alive()` is always null and `onChange` never fires.
 */
import type { Membership, MembershipListener } from '../core/membership/types.ts';

/** The memberlist-disabled membership: every Node counts (`alive()` is null). */
export class NodeListMembership implements Membership {
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  alive(): null {
    return null;
  }
  onChange(_cb: MembershipListener): void {
    // The alive set never changes: it is "every Node", and Node changes come through the watch.
  }
}
