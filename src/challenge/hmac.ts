/**
 * Flags and instance ids: HMAC-SHA256 under FLAG_SECRET, so they are stable across relaunches, recomputable by
 * the platform that knows the secret, unguessable by players, and stored nowhere but the flag Secret.
 */
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto'

export interface OwnerKey {
  namespace: string
  definition: string
  ownerKind: string
  ownerId: string
}

/**
 * The secret as a KeyObject, made again only when the secret differs from the last one (the server has one,
 * FLAG_SECRET). createHmac encodes and imports a string key on every call, a KeyObject's only once: a fifth of each
 * HMAC, two of which run on every sync.
 */
let lastKey: { secret: string; key: KeyObject } | undefined

function keyOf(secret: string): KeyObject {
  if (lastKey?.secret !== secret) lastKey = { secret, key: createSecretKey(secret, 'utf8') }
  return lastKey.key
}

function hmacHex(secret: string, message: string): string {
  return createHmac('sha256', keyOf(secret)).update(message).digest('hex')
}

/** The contract's PerOwner input: `namespace/definition/owner.kind/owner.id`. */
export function ownerMessage(key: OwnerKey): string {
  return `${key.namespace}/${key.definition}/${key.ownerKind}/${key.ownerId}`
}

/** 32 hex characters of HMAC over the owner key (PerOwner) or the Challenge uid (PerInstance). */
export function flagSecretPart(secret: string, message: string): string {
  return hmacHex(secret, message).slice(0, 32)
}

/**
 * 16 hex characters. Domain-separated from the flag ("instance:" prefix): the id is public (it is the HTTP
 * host name), so it must never be a prefix of the PerOwner flag computed over the same key.
 */
export function instanceId(secret: string, key: OwnerKey): string {
  return hmacHex(secret, `instance:${ownerMessage(key)}`).slice(0, 16)
}
