/**
 * The other executions MetalLB can take that allocateAll runs after its name-order run: other
 * orders within the ingress-entry groups whose order may matter (orderVariants), other choices
 * among tied pools (poolVariants), and the note of a Service whose answer changes in one.
 */
import { NAME, isNameOrder, type TieKind, type Ties } from './order.ts';

/** What the name-order run found about its tie groups (allocate-all.ts's NameRun). */
export interface TieFindings {
  /** Some group of two Services or more has one whose place may change an answer (`mattering` is not empty). */
  readonly tiesMatter: boolean;
  /** The ingress-entry counts of those groups, in processing order. */
  readonly mattering: readonly number[];
  /** The Services whose place may matter (moversFirst puts them first). */
  readonly movers: ReadonlySet<string>;
  /** Some such group has a Service whose place does not matter before one whose place does. */
  readonly moversFirstDiffers: boolean;
}

/** One other execution MetalLB can take: an order within the tie groups and pool choices. */
export interface Variant {
  readonly ties: Ties;
  /** preferredPools of the run (allocateAll's own map when the pool choices are name order's). */
  readonly prefer: ReadonlyMap<string, string>;
  /** The Services made to take another tied pool, with it. */
  readonly changed: ReadonlyArray<readonly [string, string]>;
}

const ORDER_NOTE = 'after a restart MetalLB processes the Services with as many status.loadBalancer.ingress entries in random (Go map) order';

/** The `nondeterministic` note of a Service whose answer changes in `v`: it `what`s there. */
export function variantNote(v: Variant, what: string): string {
  const shown =
    v.changed
      .slice(0, 3)
      .map(([k, p]) => `${k} taking ${p}`)
      .join(', ') + (v.changed.length > 3 ? ` and ${v.changed.length - 3} more` : '');
  if (v.changed.length === 0) return `${ORDER_NOTE}; in another such order this Service ${what}`;
  if (isNameOrder(v.ties)) return `MetalLB picks among equally good pools in random (Go map) order; with other such choices (${shown}) this Service ${what}`;
  return `${ORDER_NOTE}, and picks among equally good pools in random order; in another such order, with ${shown}, this Service ${what}`;
}

/**
 * The orders allocateAll tries after the name-order run `first`: name order itself, and when a
 * tie group matters every group rotated, reversed, with the Services whose place matters first
 * (when that differs), and with two such groups or more each group alone in those three ways.
 */
export function orderVariants(first: TieFindings): Ties[] {
  const orders: Ties[] = [NAME];
  if (!first.tiesMatter) return orders;
  const movers = first.movers;
  const kinds: TieKind[] = first.moversFirstDiffers ? ['rotate', 'reverse', 'moversFirst'] : ['rotate', 'reverse'];
  for (const kind of kinds) orders.push({ others: kind, movers });
  if (first.mattering.length > 1) {
    for (const n of first.mattering) for (const kind of kinds) orders.push({ byCount: new Map([[n, kind]]), others: 'name', movers });
  }
  return orders;
}

/**
 * Other pool choices: every Service that had tied pools (`tied`: chosen pool first, in any order
 * tried) and whose pool `prefer` does not fix takes the next one; and, when that differs, the last.
 */
export function poolVariants(tied: ReadonlyMap<string, readonly string[]>, prefer: ReadonlyMap<string, string>): Array<Omit<Variant, 'ties'>> {
  const out: Array<Omit<Variant, 'ties'>> = [];
  for (const pick of ['second', 'last'] as const) {
    const changed: Array<readonly [string, string]> = [];
    for (const [key, seen] of tied) {
      if (prefer.has(key) || seen.length < 2) continue;
      changed.push([key, pick === 'second' ? seen[1]! : seen[seen.length - 1]!]);
    }
    if (changed.length === 0 || (pick === 'last' && changed.every(([k, p]) => tied.get(k)![1] === p))) continue;
    out.push({ prefer: new Map([...prefer, ...changed]), changed });
  }
  return out;
}
