/**
 * Child names and the instance labels. Every name must be valid for its kind for any valid Challenge name
 * (a DNS-1123 subdomain of up to 253 characters, dots allowed): Service names are DNS-1035 labels (at most 63
 * characters, starting with a letter, no dots), and a label value is at most 63 characters.
 *
 * Distinct Challenges never share a child name or an instance label (a shared name would hand one player's pod
 * another player's flag Secret):
 * - a name that is already a short DNS-1035 label is kept as it is, and names are unique in a namespace;
 * - any other name is shortened to `<readable prefix>--<12 hex>`, the hex taken from a hash of the Challenge's uid,
 *   which the API server chooses at random: a player can neither choose nor grind it;
 * - a kept name never ends in `--<12 hex>`: one that does is shortened too, so no kept name can equal a shortened
 *   one (a player choosing an owner id cannot reproduce another instance's shortened name).
 */
import { hash } from 'node:crypto'
import { Label, MANAGED_BY } from '../contract/api.js'

/** Longest suffix we append ("-internet"), so `<base><suffix>` always fits in 63 characters. */
const LONGEST_SUFFIX = '-internet'.length
const MAX_BASE = 63 - LONGEST_SUFFIX
const HASH_LENGTH = 12
const SEPARATOR = '--'
const DNS_1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/
const SHORTENED = new RegExp(`${SEPARATOR}[0-9a-f]{${HASH_LENGTH}}$`)

/** Every instance's flag Secret is `<base>-flag`; a Static flag's own Secret may not end so (definition.ts). */
export const FLAG_SECRET_SUFFIX = '-flag'

export interface ChildNames {
  /** The shortened base: the Deployment, Service and route name, and the `instance` label value. */
  base: string
  /** The Challenge's uid: the `uid` label of its pods, which selectors require besides the instance label. */
  uid: string
  flagSecret: string
  isolatePolicy: string
  exposePolicy: string
  internetPolicy: string
}

/**
 * The base is the Challenge name when it is already a short DNS-1035 label that cannot be mistaken for a shortened
 * one; otherwise a readable prefix of it plus a hash of the uid, so two Challenges that share a prefix (or a
 * Challenge recreated under the same long name) still get different children.
 */
export function instanceBaseName(challengeName: string, uid: string): string {
  if (challengeName.length <= MAX_BASE && DNS_1035_LABEL.test(challengeName) && !SHORTENED.test(challengeName))
    return challengeName
  // crypto.hash: the one-shot digest, cheaper than createHash for a short input.
  const digest = hash('sha256', uid, 'hex').slice(0, HASH_LENGTH)
  const room = MAX_BASE - HASH_LENGTH - SEPARATOR.length
  let prefix = challengeName
    .toLowerCase()
    .replace(/[^-a-z0-9]/g, '-')
    .slice(0, room)
    .replace(/-+$/, '')
  if (!/^[a-z]/.test(prefix)) prefix = `c${prefix}`.slice(0, room).replace(/-+$/, '')
  return `${prefix}${SEPARATOR}${digest}`
}

export function childNames(challengeName: string, uid: string): ChildNames {
  const base = instanceBaseName(challengeName, uid)
  return {
    base,
    uid,
    flagSecret: `${base}${FLAG_SECRET_SUFFIX}`,
    isolatePolicy: `${base}-isolate`,
    exposePolicy: `${base}-expose`,
    internetPolicy: `${base}-internet`,
  }
}

/** The labels of every child: who manages it and which instance it belongs to. */
export function childLabels(names: ChildNames): Record<string, string> {
  return { [Label.managedBy]: MANAGED_BY, [Label.instance]: names.base, [Label.uid]: names.uid }
}

/**
 * The labels that select this Challenge's pods: the instance label and the uid label. A Deployment created
 * before the uid label existed keeps its selector (immutable in the API) and its pods keep theirs until the
 * instance ends, so its selectors stay on the instance label alone (`legacy`), which its unique name makes its own.
 */
export function podLabels(names: ChildNames, legacy = false): Record<string, string> {
  return legacy ? { [Label.instance]: names.base } : { [Label.instance]: names.base, [Label.uid]: names.uid }
}
