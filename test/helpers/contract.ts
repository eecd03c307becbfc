/**
 * The contract's formulas (docs/api.md), written again from its prose with node:crypto, so that a test compares
 * the hook's answer with a value that does not come from the code under test: the instance id and the hosts built
 * on it, the PerOwner and PerInstance flags, the hash that shortens a child name. Nothing here imports src/.
 */
import { createHash, createHmac } from 'node:crypto'

/** Whose instance: the four parts of the contract's key. */
export interface OwnerKey {
  namespace: string
  definition: string
  kind: string
  id: string
}

/** The usual key of the tests: alice's (a User) web-login in the challenges namespace. */
export const ALICE: OwnerKey = { namespace: 'challenges', definition: 'web-login', kind: 'User', id: 'alice' }

function hmacHex(secret: string, message: string): string {
  return createHmac('sha256', secret).update(message, 'utf8').digest('hex')
}

/** `status.instanceId`: 16 hex of HMAC-SHA256 under FLAG_SECRET of `instance:<namespace>/<definition>/<owner.kind>/<owner.id>`. */
export function expectedInstanceId(secret: string, key: OwnerKey): string {
  return hmacHex(secret, `instance:${key.namespace}/${key.definition}/${key.kind}/${key.id}`).slice(0, 16)
}

/** The host of an HTTP instance (`<instanceId>.<BASE_DOMAIN>`) or a TLS one (`<instanceId>.<TLS_BASE_DOMAIN>`). */
export function expectedHost(secret: string, key: OwnerKey, domain: string): string {
  return `${expectedInstanceId(secret, key)}.${domain}`
}

/** PerOwner: `prefix + hex(HMAC-SHA256(FLAG_SECRET, "<namespace>/<definition>/<owner.kind>/<owner.id>"))[0:32] + suffix`. */
export function expectedPerOwnerFlag(secret: string, key: OwnerKey, prefix = 'flag{', suffix = '}'): string {
  return `${prefix}${hmacHex(secret, `${key.namespace}/${key.definition}/${key.kind}/${key.id}`).slice(0, 32)}${suffix}`
}

/** PerInstance: the same over the Challenge's `metadata.uid`. */
export function expectedPerInstanceFlag(secret: string, uid: string, prefix = 'flag{', suffix = '}'): string {
  return `${prefix}${hmacHex(secret, uid).slice(0, 32)}${suffix}`
}

/** The 12 hex a shortened child name ends in, after `--`: of the SHA-256 of the Challenge's uid. */
export function expectedNameHash(uid: string): string {
  return createHash('sha256').update(uid, 'utf8').digest('hex').slice(0, 12)
}

/** What a flag Secret's `data.flag` holds for a flag: its bytes in base64. */
export function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64')
}

/**
 * What an instance with egress Internet may not reach besides the cluster's own ranges (docs/api.md: egress
 * Internet means public addresses only): the IANA special-purpose blocks, the cloud metadata addresses.
 */
export const NON_PUBLIC_IPV4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '168.63.129.16/32',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
]
export const NON_PUBLIC_IPV6 = [
  '::1/128',
  '64:ff9b::/96',
  '64:ff9b:1::/48',
  '100::/64',
  '2001::/32',
  '2002::/16',
  'fc00::/7',
  'fe80::/10',
  'ff00::/8',
]
