/**
 * Owners and the names of their Challenges. The gateway names every Challenge itself, from the definition and the
 * owner, so that "is there an instance?" is one GET and no two owners can ever land on one name, whatever ids a
 * platform passes: `<definition>-<16 hex>`, the hex being SHA-256 over the JSON array `[kind, id]` (an encoding with
 * exactly one reading, unlike `<definition>-u-<id>`, where definition `a-u-b` and owner `c` meet definition `a` and
 * owner `b-u-c`). The name ends in a fixed-length hash after a dash, so the definition part is read back without
 * ambiguity too. 63 + 17 characters: a valid Challenge name for every valid definition name.
 */
import { hash } from 'node:crypto'
import { DNS_LABEL } from '../contract/patterns.js'

export const OWNER_KINDS = ['User', 'Team'] as const
export type OwnerKind = (typeof OWNER_KINDS)[number]

export interface Owner {
  kind: OwnerKind
  id: string
}

const OWNER_ID = new RegExp(DNS_LABEL)

export function challengeName(definition: string, owner: Owner): string {
  return `${definition}-${hash('sha256', JSON.stringify([owner.kind, owner.id]), 'hex').slice(0, 16)}`
}

/** `User:alice` (a JWT's `sub`, the header a platform names its owner in), or a problem naming what is wrong. */
export function parseOwner(text: string): { owner: Owner } | { problem: string } {
  const colon = text.indexOf(':')
  const kind = text.slice(0, colon)
  const id = text.slice(colon + 1)
  if (colon < 0 || !(OWNER_KINDS as readonly string[]).includes(kind)) {
    return { problem: `must be <kind>:<id> with kind User or Team, got ${JSON.stringify(text.slice(0, 80))}` }
  }
  if (!OWNER_ID.test(id)) {
    return {
      problem: `the owner id must be a DNS label (lowercase letters, digits and -, at most 63), got ${JSON.stringify(id.slice(0, 80))}`,
    }
  }
  return { owner: { kind: kind as OwnerKind, id } }
}

export function ownerText(owner: Owner): string {
  return `${owner.kind}:${owner.id}`
}

export function sameOwner(a: Owner, b: { kind?: unknown; id?: unknown } | undefined): boolean {
  return b !== undefined && a.kind === b.kind && a.id === b.id
}
