/**
 * Checking a submitted flag without storing one: the hook server recomputes the flag of each candidate owner (or
 * instance) from FLAG_SECRET and compares digests in constant time. The gateway, which faces the internet and holds
 * no FLAG_SECRET, asks for it over an internal endpoint (POST /flags/verify) and names the candidates it knows: the
 * claimed owner, and the owners of the definition's other Challenges, so that a flag passed on is recognised.
 */
import { hash, timingSafeEqual } from 'node:crypto'
import { Type, type Static } from '@sinclair/typebox'
import { DEFINITION_NAME, DNS_LABEL } from '../contract/patterns.js'
import { flagSecretPart, ownerMessage } from './hmac.js'

/** The longest flag prefix or suffix a definition may have (the CRD's maxLength). */
const FLAG_AFFIX = 64

/** The most candidates one check compares: every Challenge of a definition in a namespace, with room to spare. */
export const MAX_FLAG_CANDIDATES = 10_000

const OwnerSchema = Type.Object(
  {
    kind: Type.Union([Type.Literal('User'), Type.Literal('Team')]),
    id: Type.String({ pattern: DNS_LABEL, maxLength: 63 }),
    /** The Challenge's metadata.uid, when its record exists: what a PerInstance flag is made from. */
    uid: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  },
  { additionalProperties: false },
)
export type FlagOwner = Static<typeof OwnerSchema>

export const FlagCheckRequestSchema = Type.Object(
  {
    namespace: Type.String({ pattern: DNS_LABEL, maxLength: 63 }),
    definition: Type.String({ pattern: DEFINITION_NAME, maxLength: 63 }),
    /** The definition's flag settings, as the gateway read them from the ChallengeDefinition. */
    flag: Type.Object(
      {
        mode: Type.Union([Type.Literal('PerOwner'), Type.Literal('PerInstance')]),
        prefix: Type.String({ maxLength: FLAG_AFFIX }),
        suffix: Type.String({ maxLength: FLAG_AFFIX }),
      },
      { additionalProperties: false },
    ),
    /** Who submitted the flag. */
    owner: OwnerSchema,
    /** The other owners whose flag it might be (the claimed owner among them is ignored). */
    candidates: Type.Array(OwnerSchema, { maxItems: MAX_FLAG_CANDIDATES }),
    submitted: Type.String({ maxLength: 1024 }),
  },
  { additionalProperties: false },
)
export type FlagCheckRequest = Static<typeof FlagCheckRequestSchema>

export type FlagCheck =
  | { result: 'correct' }
  | { result: 'incorrect' }
  | { result: 'anotherOwner'; owner: { kind: FlagOwner['kind']; id: string } }
  /** PerInstance without the claimed owner's record: its uid, and so its flag, is gone. */
  | { result: 'unverifiable'; message: string }

const digest = (value: string): Buffer => hash('sha256', value, 'buffer')

/** The flag of `owner`, or undefined for a PerInstance flag whose record (uid) is not known. */
function expectedFlag(request: FlagCheckRequest, owner: FlagOwner, flagSecret: string): string | undefined {
  const { namespace, definition, flag } = request
  const message =
    flag.mode === 'PerOwner'
      ? ownerMessage({ namespace, definition, ownerKind: owner.kind, ownerId: owner.id })
      : owner.uid
  return message === undefined ? undefined : flag.prefix + flagSecretPart(flagSecret, message) + flag.suffix
}

/**
 * Compares the submission with the claimed owner's flag and with every candidate's, always all of them and each in
 * constant time (fixed-length digests), so the time taken says nothing of which one matched.
 */
export function checkFlag(request: FlagCheckRequest, flagSecret: string): FlagCheck {
  const submitted = digest(request.submitted)
  const matches = (owner: FlagOwner): boolean => {
    const expected = expectedFlag(request, owner, flagSecret)
    // A missing uid is compared against a digest all the same, so that it costs what a real comparison costs.
    return timingSafeEqual(submitted, digest(expected ?? '')) && expected !== undefined
  }
  const own = matches(request.owner)
  let other: FlagOwner | undefined
  for (const candidate of request.candidates) {
    const same = candidate.kind === request.owner.kind && candidate.id === request.owner.id
    if (matches(candidate) && !same && other === undefined) other = candidate
  }
  if (own) return { result: 'correct' }
  if (other !== undefined) return { result: 'anotherOwner', owner: { kind: other.kind, id: other.id } }
  if (request.flag.mode === 'PerInstance' && request.owner.uid === undefined) {
    return {
      result: 'unverifiable',
      message:
        "A PerInstance flag is made from the Challenge's uid, and this owner's Challenge record is gone: it cannot be checked any more.",
    }
  }
  return { result: 'incorrect' }
}
