// src/child/keys.ts — RSA-2048 key pairs and the `function + nonce` signatures of the child protocol (§4).
import { constants, createPrivateKey, generateKeyPair, randomInt, sign, verify, type KeyObject } from 'node:crypto';

/** PHP OPENSSL_ALGO_* values the child accepts for `sign_algo` (§4.3), and their digests. */
export const SIGN_ALGOS: Readonly<Record<number, string>> = { 1: 'sha1', 6: 'sha224', 7: 'sha256', 8: 'sha384', 9: 'sha512' };
export const SHA1 = 1;
export const DEFAULT_SIGN_ALGO = 7;

export interface KeyPair {
  publicKeyPem: string;
  privateKeyPem: string;
}

/** A fresh pair per register/reconnect, like the dashboard: SPKI public PEM (sent), PKCS#8 private PEM (kept). */
export function newKeyPair(): Promise<KeyPair> {
  return new Promise((resolve, reject) => {
    generateKeyPair(
      'rsa',
      {
        modulusLength: 2048,
        publicExponent: 0x10001,
        publicKeyEncoding: { type: 'spki', format: 'pem' },
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      },
      (err, publicKeyPem, privateKeyPem) => (err ? reject(err) : resolve({ publicKeyPem, privateKeyPem })),
    );
  });
}

/** The child never checks nonces (§4.7); the dashboard sends wp_rand(0, 9999). */
export function newNonce(): string {
  return String(randomInt(0, 10000));
}

// Parsed private keys, so a sync does not parse PEM on every call (OpenSSL 3 decoding costs more than the signature
// itself). In memory only, like the PEMs the callers hold; the oldest entry goes first once the map is full.
const parsedKeys = new Map<string, KeyObject>();
const MAX_PARSED_KEYS = 10_000;

function privateKey(pem: string): KeyObject {
  let key = parsedKeys.get(pem);
  if (!key) {
    key = createPrivateKey(pem);
    parsedKeys.set(pem, key);
    if (parsedKeys.size > MAX_PARSED_KEYS) parsedKeys.delete(parsedKeys.keys().next().value!);
  }
  return key;
}

/**
 * base64 of RSASSA-PKCS1-v1_5 over `fn + nonce` with the digest of `signAlgo`. Uses the callback form of
 * crypto.sign so the RSA work runs on the libuv pool rather than the event loop (a sync of 1,000 sites signs 1,000 times).
 */
export function signRequest(fn: string, nonce: string, privateKeyPem: string, signAlgo: number): Promise<string> {
  const digest = SIGN_ALGOS[signAlgo];
  if (!digest) return Promise.reject(new RangeError(`unsupported sign_algo ${signAlgo}`));
  return new Promise((resolve, reject) => {
    try {
      sign(digest, Buffer.from(fn + nonce), privateKey(privateKeyPem), (err, sig) => (err ? reject(err) : resolve(sig.toString('base64'))));
    } catch (err) {
      reject(err);
    }
  });
}

/** The child's check (simulator side): `signAlgo` 'pss' is the phpseclib path of `verifylib` (§4.4). */
export function verifySignature(data: string, signature: Buffer, publicKey: KeyObject, signAlgo: number | 'pss'): boolean {
  try {
    if (signAlgo === 'pss') {
      return verify('sha256', Buffer.from(data), { key: publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }, signature);
    }
    const digest = SIGN_ALGOS[signAlgo];
    return digest !== undefined && verify(digest, Buffer.from(data), publicKey, signature);
  } catch {
    return false;
  }
}
