/**
 * memberlist's encryption (security.go, keyring.go) and MetalLB's key derivation.
 *
 * Encrypted blob: `version (1) · nonce (12) · ciphertext · tag (16)`, AES-GCM with the key length
 * choosing AES-128/192/256. Version 1 encrypts the plaintext as is (what a protocol-2 member
 * sends); version 0 (protocol 1 members) PKCS#7-pads to 16 bytes first, and is accepted on
 * receive. The keyring's first key is the primary (encrypts); decryption tries every key in order.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** Bytes added by version-1 encryption: version + nonce + tag. */
export const ENCRYPT_OVERHEAD_BYTES = 1 + 12 + 16;
const NONCE = 12;
const TAG = 16;

/** Decryption failed with every key, or the blob is malformed (the packet is dropped and counted). */
export class DecryptError extends Error {
  override name = 'DecryptError';
}

/**
 * The memberlist key MetalLB v0.16.1 computes from the speaker secret
 * (`sha256.New().Sum([]byte(secret))[:32]`): `Sum` *appends* the digest of nothing written
 * (SHA-256 of "") to the secret, so the key is the secret's first 32 bytes, padded with the first
 * bytes of SHA-256("") when shorter. Always 32 bytes (AES-256). `secret` must not be empty
 * (MetalLB then runs unencrypted).
 */
export function metallbSecretKey(secret: Uint8Array): Uint8Array {
  if (secret.length === 0) throw new RangeError('empty memberlist secret: MetalLB runs unencrypted');
  const empty = createHash('sha256').digest();
  const sum = new Uint8Array(secret.length + empty.length);
  sum.set(secret, 0);
  sum.set(empty, secret.length);
  return sum.slice(0, 32);
}

/** An ordered keyring: `keys[0]` is the primary. Keys are 16, 24 or 32 bytes (else RangeError). */
export class Keyring {
  readonly keys: readonly Uint8Array[];
  constructor(keys: readonly Uint8Array[]) {
    if (keys.length === 0) throw new RangeError('keyring: at least one key');
    for (const k of keys) {
      if (k.length !== 16 && k.length !== 24 && k.length !== 32) throw new RangeError(`keyring: key size ${k.length} must be 16, 24 or 32 bytes`);
    }
    this.keys = keys.map((k) => Uint8Array.from(k));
  }
}

function cipherName(key: Uint8Array): 'aes-128-gcm' | 'aes-192-gcm' | 'aes-256-gcm' {
  return key.length === 16 ? 'aes-128-gcm' : key.length === 24 ? 'aes-192-gcm' : 'aes-256-gcm';
}

/**
 * Encrypts `plain` with the primary key as version 1 (or 0 with PKCS#7 padding). `aad` is the
 * additional authenticated data (packets: the label; streams: the 5-byte header + label).
 * `nonce` is random unless given (tests).
 */
export function encryptPayload(keyring: Keyring, plain: Uint8Array, aad: Uint8Array, version: 0 | 1 = 1, nonce?: Uint8Array): Uint8Array {
  const key = keyring.keys[0]!;
  const n = nonce ?? randomBytes(NONCE);
  let data = plain;
  if (version === 0) {
    const pad = 16 - (plain.length % 16);
    data = new Uint8Array(plain.length + pad);
    data.set(plain);
    data.fill(pad, plain.length);
  }
  const c = createCipheriv(cipherName(key), key, n, { authTagLength: TAG });
  c.setAAD(aad);
  const ct = Buffer.concat([c.update(data), c.final()]);
  const out = new Uint8Array(1 + NONCE + ct.length + TAG);
  out[0] = version;
  out.set(n, 1);
  out.set(ct, 1 + NONCE);
  out.set(c.getAuthTag(), 1 + NONCE + ct.length);
  return out;
}

/**
 * Decrypts a blob trying every key in order. Throws `DecryptError` when the version is not 0/1,
 * the blob is too short, no key authenticates it, or version-0 padding is invalid.
 */
export function decryptPayload(keyring: Keyring, blob: Uint8Array, aad: Uint8Array): Uint8Array {
  if (blob.length < 1) throw new DecryptError('cannot decrypt empty payload');
  const version = blob[0]!;
  if (version > 1) throw new DecryptError(`unsupported encryption version ${version}`);
  const min = 1 + NONCE + TAG + (version === 0 ? 16 : 0);
  if (blob.length < min) throw new DecryptError('payload is too small to decrypt');
  const nonce = blob.subarray(1, 1 + NONCE);
  const ct = blob.subarray(1 + NONCE, blob.length - TAG);
  const tag = blob.subarray(blob.length - TAG);
  for (const key of keyring.keys) {
    try {
      const d = createDecipheriv(cipherName(key), key, nonce, { authTagLength: TAG });
      d.setAAD(aad);
      d.setAuthTag(tag);
      const plain = new Uint8Array(Buffer.concat([d.update(ct), d.final()]));
      if (version === 0) {
        const pad = plain[plain.length - 1] ?? 0;
        if (pad < 1 || pad > 16 || pad > plain.length) throw new DecryptError('invalid padding');
        return plain.subarray(0, plain.length - pad);
      }
      return plain;
    } catch (e) {
      if (e instanceof DecryptError) throw e;
      // wrong key: try the next one
    }
  }
  throw new DecryptError('no installed keys could decrypt the message');
}
