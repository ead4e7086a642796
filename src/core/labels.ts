/**
 * Kubernetes label selectors with apimachinery semantics, as MetalLB v0.16.1 uses them
 * (`metav1.LabelSelectorAsSelector`, `labels.Selector.Matches/String`), plus MetalLB's own
 * duplicate rules for selector lists and string lists (`validateLabelSelectorDuplicate`,
 * `validateDuplicate` in internal/config/config.go).
 */
import type { LabelSelector, LabelSelectorRequirement } from './kube.ts';
import { quote } from './errors.ts';

/** A parsed label selector: the source selector, its canonical string, and a matcher. */
export interface Selector {
  /** As written in the CR. */
  readonly source: LabelSelector;
  /** Kubernetes' canonical string form (`a=b,c in (d,e)`); `""` matches everything. */
  readonly text: string;
  /** Whether a label set matches. */
  matches(labels: Readonly<Record<string, string>> | undefined | null): boolean;
}

const QUALIFIED_NAME_RE = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE_RE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/**
 * Why `key` is not a valid label key (Kubernetes `IsQualifiedName`: optional DNS-subdomain prefix
 * of at most 253 characters and `/`, then a 1–63 character name), or undefined when it is valid.
 */
export function labelKeyError(key: string): string | undefined {
  if (typeof key !== 'string') return 'key must be a string';
  const parts = key.split('/');
  let name: string;
  if (parts.length === 1) name = parts[0];
  else if (parts.length === 2) {
    const prefix = parts[0];
    name = parts[1];
    if (prefix.length === 0) return `invalid label key "${key}": prefix part must be non-empty`;
    if (prefix.length > 253) return `invalid label key "${key}": prefix part must be no more than 253 characters`;
    if (!DNS1123_SUBDOMAIN_RE.test(prefix)) {
      return `invalid label key "${key}": prefix part must be a lowercase RFC 1123 subdomain`;
    }
  } else {
    return `invalid label key "${key}": a qualified name must consist of alphanumeric characters, '-', '_' or '.', with an optional DNS subdomain prefix and '/'`;
  }
  if (name.length === 0) return `invalid label key "${key}": name part must be non-empty`;
  if (name.length > 63) return `invalid label key "${key}": name part must be no more than 63 characters`;
  if (!QUALIFIED_NAME_RE.test(name)) {
    return `invalid label key "${key}": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`;
  }
  return undefined;
}

/** Why `value` is not a valid label value (empty, or 1–63 chars `[A-Za-z0-9_.-]`, alphanumeric ends), or undefined. */
export function labelValueError(value: string): string | undefined {
  if (typeof value !== 'string') return 'label value must be a string';
  if (value.length > 63) return `invalid label value "${value}": must be no more than 63 characters`;
  if (!LABEL_VALUE_RE.test(value)) {
    return `invalid label value "${value}": must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`;
  }
  return undefined;
}

type Op = 'in' | 'notin' | 'exists' | '!' | '=';

interface Requirement {
  key: string;
  op: Op;
  values: string[];
}

function requirementText(r: Requirement): string {
  switch (r.op) {
    case '=':
      return `${r.key}=${r.values[0]}`;
    case 'in':
      return `${r.key} in (${r.values.join(',')})`;
    case 'notin':
      return `${r.key} notin (${r.values.join(',')})`;
    case 'exists':
      return r.key;
    case '!':
      return `!${r.key}`;
  }
}

function requirementMatches(r: Requirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, r.key);
  switch (r.op) {
    case '=':
      return has && labels[r.key] === r.values[0];
    case 'in':
      return has && r.values.includes(labels[r.key]);
    case 'notin':
      return !has || !r.values.includes(labels[r.key]);
    case 'exists':
      return has;
    case '!':
      return !has;
  }
}

const OPERATORS: Record<string, Op> = { In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!' };

/**
 * Converts a `LabelSelector` as Kubernetes' `LabelSelectorAsSelector` does: `matchLabels` entries
 * become `key=value`, expressions `In`/`NotIn`/`Exists`/`DoesNotExist` requirements (values
 * sorted); requirements are sorted by key. Matching ANDs the requirements; `NotIn` and
 * `DoesNotExist` match when the key is absent; a selector with neither `matchLabels` nor
 * `matchExpressions` matches everything and prints as `""`.
 *
 * @throws Error with a clear message when the selector is invalid: an unknown or missing
 *   operator, an invalid key or value, `In`/`NotIn` without values, `Exists`/`DoesNotExist`
 *   with values.
 */
export function parseSelector(sel: LabelSelector): Selector {
  const source = sel ?? {};
  const reqs: Requirement[] = [];
  const matchLabels = source.matchLabels ?? {};
  for (const key of Object.keys(matchLabels).sort()) {
    const value = matchLabels[key];
    const ke = labelKeyError(key);
    if (ke) throw new Error(ke);
    const ve = labelValueError(value);
    if (ve) throw new Error(`${ve} (matchLabels key "${key}")`);
    reqs.push({ key, op: '=', values: [value] });
  }
  for (const expr of source.matchExpressions ?? []) {
    const op = OPERATORS[expr?.operator as string];
    if (!op) throw new Error(`"${expr?.operator ?? ''}" is not a valid label selector operator`);
    const ke = labelKeyError(expr.key);
    if (ke) throw new Error(ke);
    const values = [...(expr.values ?? [])];
    if ((op === 'in' || op === 'notin') && values.length === 0) {
      throw new Error(`key "${expr.key}": for 'in', 'notin' operators, values set can't be empty`);
    }
    if ((op === 'exists' || op === '!') && values.length > 0) {
      throw new Error(`key "${expr.key}": values set must be empty for exists and does not exist`);
    }
    for (const v of values) {
      const ve = labelValueError(v);
      if (ve) throw new Error(`${ve} (key "${expr.key}")`);
    }
    values.sort(compareStrings);
    reqs.push({ key: expr.key, op, values });
  }
  reqs.sort((a, b) => compareStrings(a.key, b.key));
  const text = reqs.map(requirementText).join(',');
  return {
    source,
    text,
    matches(labels) {
      const l = labels ?? {};
      return reqs.every((r) => requirementMatches(r, l));
    },
  };
}

/** Byte-wise string order (Go's `<` on strings for ASCII input). */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * MetalLB's `validateDuplicate`: throws when a string list repeats an entry exactly.
 * `what` names the list in the message (e.g. `ipAddressPools`).
 */
export function checkDuplicateStrings(list: readonly string[] | null | undefined, what: string): void {
  const seen = new Set<string>();
  for (const s of list ?? []) {
    if (seen.has(s)) throw new Error(`duplicate definition of ${what} "${s}"`);
    seen.add(s);
  }
}

function exprKey(e: LabelSelectorRequirement): string {
  return JSON.stringify([e.key, e.operator, [...(e.values ?? [])].sort(compareStrings)]);
}

function selectorKey(s: LabelSelector): string {
  const ml = s?.matchLabels ?? {};
  const labels = Object.keys(ml)
    .sort()
    .map((k) => [k, ml[k]]);
  return JSON.stringify([labels, (s?.matchExpressions ?? []).map(exprKey)]);
}

/**
 * MetalLB's `validateLabelSelectorDuplicate` for one selector list (values of each expression
 * compared sorted): per selector, a value repeated within one expression, then two identical
 * expressions (key, operator, values), then the same selector (matchLabels as a map,
 * matchExpressions in order) appearing later in the list. Does not check validity.
 *
 * @throws Error naming `what` (e.g. `nodeSelectors`) on the first duplicate.
 */
export function checkDuplicateSelectors(list: readonly LabelSelector[] | null | undefined, what: string): void {
  const sels = list ?? [];
  const keys = sels.map(selectorKey);
  for (let i = 0; i < sels.length; i++) {
    const exprs = sels[i]?.matchExpressions ?? [];
    for (let a = 0; a < exprs.length; a++) {
      checkDuplicateStrings(exprs[a].values, 'match expression value in label selector');
      for (let b = a + 1; b < exprs.length; b++) {
        if (exprKey(exprs[a]) === exprKey(exprs[b])) {
          throw new Error(`duplicate definition of match expressions ${quote(exprs[a])}`);
        }
      }
    }
    for (let j = i + 1; j < sels.length; j++) {
      if (keys[i] === keys[j]) throw new Error(`duplicate definition of ${what} ${quote(sels[i])}`);
    }
  }
}

/**
 * Checks duplicates (checkDuplicateSelectors) then validity of every selector of a list, and
 * returns them parsed, in list order.
 * @throws Error on the first duplicate or invalid selector.
 */
export function parseSelectorList(list: readonly LabelSelector[] | null | undefined, what: string): Selector[] {
  checkDuplicateSelectors(list, what);
  return (list ?? []).map((s) => {
    try {
      return parseSelector(s);
    } catch (err) {
      throw new Error(`invalid ${what} ${quote(s)}: ${(err as Error).message}`);
    }
  });
}

/** The selector that matches everything (`labels.Everything()`), text `""`. */
export function everything(): Selector {
  return parseSelector({});
}

/**
 * Whether a label set matches at least one of `selectors` (MetalLB's ORed selector lists).
 * An empty list matches nothing.
 */
export function matchesAny(selectors: readonly Selector[], labels: Readonly<Record<string, string>> | undefined | null): boolean {
  return selectors.some((s) => s.matches(labels));
}
