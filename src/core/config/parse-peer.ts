/**
 * BGPPeer and BFDProfile objects parsed as MetalLB's config.go parses them: timers, passwords from
 * Secrets, BFD ranges; each a typed Peer / BFDProfileConfig or a ConfigError naming the field.
 */
import { ConfigError, quote, TransientConfigError } from '../errors.ts';
import type { BFDProfile, BGPPeer, LabelSelector, Secret } from '../kube.ts';
import { objectRef } from '../kube.ts';
import { canonicalIP, parseIP } from '../ip.ts';
import { everything, parseSelectorList } from '../labels.ts';
import { nsToSeconds, parseDurationNs } from './duration.ts';
import type { BFDProfileConfig, Peer, Selector } from './types.ts';

type BFDRangeKey = 'detectMultiplier' | 'receiveInterval' | 'transmitInterval' | 'minimumTtl' | 'echoInterval';

const BFD_RANGES: Array<[key: BFDRangeKey, min: number, max: number, what: string]> = [
  ['detectMultiplier', 2, 255, 'detect multiplier'],
  ['receiveInterval', 10, 60000, 'receive interval'],
  ['transmitInterval', 10, 60000, 'transmit interval'],
  ['minimumTtl', 1, 254, 'minimum ttl'],
  ['echoInterval', 10, 60000, 'echo interval'],
];

/**
 * One BFDProfile (MetalLB `bfdProfileFromCR`): a name is required and each set value must be in
 * range (inclusive): detectMultiplier 2–255, receiveInterval / transmitInterval / echoInterval
 * 10–60000 ms, minimumTtl 1–254. Does not check name uniqueness.
 * @throws ConfigError naming the object.
 */
export function parseBFDProfile(cr: BFDProfile): BFDProfileConfig {
  const ref = objectRef(cr);
  const name = cr.metadata?.name;
  if (!name) throw new ConfigError('missing bfd profile name', ref);
  const spec = (cr.spec ?? {}) as Record<string, unknown>;
  const ranges: { [K in BFDRangeKey]?: number } = {};
  for (const [key, min, max, what] of BFD_RANGES) {
    const v = spec[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw new ConfigError(`invalid ${what} value ${quote(v)}: must be in ${min}-${max} range`, ref);
    }
    ranges[key] = v;
  }
  return { name, ...ranges, echoMode: spec.echoMode === true, passiveMode: spec.passiveMode === true, source: cr };
}

// ---------------------------------------------------------------------------------------------
// BGP peers

function str(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
}
function num(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}

function parseDurationField(v: unknown, field: string): bigint | undefined {
  if (v === undefined || v === null) return undefined;
  try {
    return parseDurationNs(v as string);
  } catch {
    throw new Error(`invalid ${field} ${quote(v)}: not a duration`);
  }
}

/**
 * MetalLB `parseTimers`: neither set → none; only hold → keepalive = hold / 3 (whole ns, rounded
 * down); only keepalive → hold = keepalive × 3. The hold time truncated to whole seconds must be
 * 0 or >= 3s, and keepalive must not exceed hold.
 */
function parseTimers(holdText: unknown, kaText: unknown): { hold?: bigint; keepalive?: bigint } {
  const ht = parseDurationField(holdText, 'holdTime');
  const ka = parseDurationField(kaText, 'keepaliveTime');
  if (ht === undefined && ka === undefined) return {};
  const hold = ht ?? ka! * 3n;
  const keepalive = ka ?? ht! / 3n;
  const wholeSeconds = hold / 1_000_000_000n;
  if (wholeSeconds !== 0n && wholeSeconds < 3n) {
    throw new Error(`invalid hold time ${quote(holdText ?? `${nsToSeconds(hold)}s`)}: must be 0 or >=3s`);
  }
  if (keepalive > hold) {
    throw new Error(`invalid keepaliveTime ${quote(kaText ?? '')}, must be lower than holdTime ${quote(holdText ?? '')}`);
  }
  return { hold, keepalive };
}

/** `{ key: value }`, or `{}` when `value` is undefined: an optional field of a Peer (a renamed field fails the type check). */
function optional<K extends keyof Peer>(key: K, value: Peer[K] | undefined): Partial<Pick<Peer, K>> {
  return value === undefined ? {} : ({ [key]: value } as Partial<Pick<Peer, K>>);
}

function decodeBase64(s: string): string {
  return Buffer.from(s, 'base64').toString('utf8');
}

/**
 * One BGPPeer by its own rules (MetalLB `peerFromCR`), in order: myASN set; peerASN or
 * dynamicASN (not both; dynamicASN `internal`/`external`); no ebgpMultiHop when peerASN equals
 * myASN; exactly one of peerAddress / interface; timers; peerAddress, routerID, sourceAddress
 * valid IPs; nodeSelectors (duplicates, then validity; none means one match-everything
 * selector); not both password and passwordSecret; the passwordSecret (looked up in `secrets`
 * by name) exists, is `kubernetes.io/basic-auth` and has a `password` key.
 * Does not check the BFD profile reference or duplicates (parseConfig does).
 * @throws ConfigError naming the object.
 */
export function parsePeer(cr: BGPPeer, secrets: readonly Secret[]): Peer {
  const ref = objectRef(cr);
  const name = cr.metadata?.name ?? '';
  const spec = (cr.spec ?? {}) as Record<string, unknown>;
  const fail = (m: string): never => {
    throw new ConfigError(m, ref);
  };
  const myASN = num(spec.myASN);
  const asn = num(spec.peerASN);
  const dynamicASN = str(spec.dynamicASN);
  const address = str(spec.peerAddress);
  const iface = str(spec.interface);
  if (myASN === 0) fail('missing local ASN (spec.myASN)');
  if (asn === 0 && dynamicASN === '') fail('missing peer ASN and dynamicASN');
  if (asn !== 0 && dynamicASN !== '') fail('both peer ASN and dynamicASN specified');
  if (dynamicASN !== '' && dynamicASN !== 'internal' && dynamicASN !== 'external') fail(`invalid dynamicASN ${dynamicASN}`);
  if (asn === myASN && spec.ebgpMultiHop === true) fail('invalid ebgp-multihop parameter set for an ibgp peer');
  if (address === '' && iface === '') fail('peer has no Address or Interface specified');
  if (address !== '' && iface !== '') fail('peer has both Address and Interface specified');
  let timers: { hold?: bigint; keepalive?: bigint } = {};
  try {
    timers = parseTimers(spec.holdTime, spec.keepaliveTime);
  } catch (err) {
    fail(`invalid BGPPeer timers: ${(err as Error).message}`);
  }
  if (address !== '' && !parseIP(address)) fail(`invalid BGPPeer address "${address}"`);
  const routerID = str(spec.routerID);
  if (routerID !== '' && !parseIP(routerID)) fail(`invalid router ID "${routerID}"`);
  const sourceAddress = str(spec.sourceAddress);
  if (sourceAddress !== '' && !parseIP(sourceAddress)) fail(`invalid source IP "${sourceAddress}"`);
  let nodeSelectors: Selector[] = [];
  try {
    nodeSelectors = parseSelectorList(spec.nodeSelectors as LabelSelector[] | undefined, 'nodeSelectors');
  } catch (err) {
    fail((err as Error).message);
  }
  if (nodeSelectors.length === 0) nodeSelectors = [everything()];
  const password = str(spec.password);
  const ps = spec.passwordSecret as { name?: string; namespace?: string } | undefined | null;
  const secretName = str(ps?.name);
  if (password !== '' && secretName !== '') fail('can not have both password and passwordSecret set');
  let secretPassword = '';
  if (secretName !== '') {
    const secret = secrets.find((s) => s.metadata?.name === secretName);
    if (!secret) throw new TransientConfigError(`passwordSecret "${secretName}" not found (no Secret of that name in MetalLB's namespace)`, ref);
    if (secret!.type !== 'kubernetes.io/basic-auth') {
      fail(`passwordSecret "${secretName}" has type "${secret!.type ?? ''}", type "kubernetes.io/basic-auth" is expected`);
    }
    const data = secret!.data ?? {};
    if (!Object.hasOwn(data, 'password')) fail(`password not specified in the secret "${secretName}"`);
    secretPassword = decodeBase64(str(data.password));
  }
  const connect = (() => {
    try {
      return parseDurationField(spec.connectTime, 'connectTime');
    } catch (err) {
      return fail((err as Error).message);
    }
  })();
  return {
    name,
    myASN,
    asn,
    dynamicASN,
    ...optional('address', address !== '' ? canonicalIP(address) : undefined),
    ...optional('interface', iface !== '' ? iface : undefined),
    ...optional('sourceAddress', sourceAddress !== '' ? canonicalIP(sourceAddress) : undefined),
    port: num(spec.peerPort),
    ...optional('holdTimeSeconds', timers.hold !== undefined ? nsToSeconds(timers.hold) : undefined),
    ...optional('keepaliveTimeSeconds', timers.keepalive !== undefined ? nsToSeconds(timers.keepalive) : undefined),
    ...optional('connectTimeSeconds', connect !== undefined ? nsToSeconds(connect) : undefined),
    ...optional('routerID', routerID !== '' ? canonicalIP(routerID) : undefined),
    nodeSelectors,
    password,
    ...optional('passwordSecret', ps !== undefined && ps !== null ? { ...(ps.name ? { name: ps.name } : {}), ...(ps.namespace ? { namespace: ps.namespace } : {}) } : undefined),
    secretPassword,
    bfdProfile: str(spec.bfdProfile),
    enableGracefulRestart: spec.enableGracefulRestart === true,
    ebgpMultiHop: spec.ebgpMultiHop === true,
    vrf: str(spec.vrf),
    dualStackAddressFamily: spec.dualStackAddressFamily === true,
    disableMP: spec.disableMP === true,
    localASN: num(spec.localASN),
    source: cr,
  };
}

/** Every parsed field of a peer, for MetalLB's "peer equal in every field" duplicate rule. */
export function peerIdentity(p: Peer): string {
  const { source: _source, nodeSelectors, passwordSecret, ...fields } = p;
  const rest: Record<string, unknown> = fields;
  // Go compares the SecretReference struct: an absent and an empty reference are equal.
  const ref = { name: passwordSecret?.name ?? '', namespace: passwordSecret?.namespace ?? '' };
  const sorted = Object.keys(rest)
    .sort()
    .map((k) => [k, rest[k]]);
  sorted.push(['passwordSecret', ref]);
  return JSON.stringify([sorted, nodeSelectors.map((s) => s.text)]);
}

// ---------------------------------------------------------------------------------------------
// Advertisements
