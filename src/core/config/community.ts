/**
 * BGP communities as MetalLB v0.16.1 parses them (`internal/bgp/community.New`): legacy
 * `<asn>:<value>` (two decimal numbers below 65536) and large `large:<a>:<b>:<c>` (three
 * decimal numbers below 2^32).
 */

/** A parsed community; `text` is its canonical form (`64512:1234`, `large:1:2:3`). */
export interface Community {
  readonly kind: 'legacy' | 'large';
  readonly text: string;
}

/** Why a string is not a community: a wrong number of `:` parts (`format`, could be an alias name) or a bad part (`value`). */
export type CommunityParseError = { readonly error: 'format' | 'value'; readonly message: string };

function parseUint(s: string, max: bigint): bigint | undefined {
  if (!/^[0-9]+$/.test(s)) return undefined;
  const v = BigInt(s);
  return v <= max ? v : undefined;
}

/**
 * Parses a community value. Two `:`-separated parts: legacy; four with the marker `large`:
 * large; any other count is a `format` error; a non-decimal or out-of-range part (or a wrong
 * marker) is a `value` error. Leading zeros are allowed and dropped in `text`.
 */
export function parseCommunity(s: string): Community | CommunityParseError {
  const parts = String(s).split(':');
  if (parts.length === 2) {
    const a = parseUint(parts[0], 0xffffn);
    const b = parseUint(parts[1], 0xffffn);
    if (a === undefined || b === undefined) {
      return { error: 'value', message: `invalid community value "${s}": each part must be a decimal number below 65536` };
    }
    return { kind: 'legacy', text: `${a}:${b}` };
  }
  if (parts.length === 4) {
    if (parts[0] !== 'large') {
      return { error: 'value', message: `invalid community value "${s}": a large community is large:<uint32>:<uint32>:<uint32>` };
    }
    const v = parts.slice(1).map((p) => parseUint(p, 0xffffffffn));
    if (v.some((x) => x === undefined)) {
      return { error: 'value', message: `invalid community value "${s}": each part must be a decimal number below 2^32` };
    }
    return { kind: 'large', text: `large:${v.join(':')}` };
  }
  return { error: 'format', message: `invalid community format "${s}"` };
}

/** Type guard: whether parseCommunity failed. */
export function isCommunityError(c: Community | CommunityParseError): c is CommunityParseError {
  return 'error' in c;
}
