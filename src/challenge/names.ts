/**
 * Child names and the instance label. Every name must be valid for its kind for any valid Challenge name
 * (a DNS-1123 subdomain of up to 253 characters, dots allowed): Service names are DNS-1035 labels (at most 63
 * characters, starting with a letter, no dots), and a label value is at most 63 characters.
 */
import { createHash } from 'node:crypto'

/** Longest suffix we append ("-internet"), so `<base><suffix>` always fits in 63 characters. */
const LONGEST_SUFFIX = '-internet'.length
const MAX_BASE = 63 - LONGEST_SUFFIX
const HASH_LENGTH = 8
const DNS_1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/

export interface ChildNames {
  /** The shortened base: the Deployment, Service and Ingress name, and the `instance` label value. */
  base: string
  flagSecret: string
  isolatePolicy: string
  exposePolicy: string
  internetPolicy: string
}

/**
 * The base is the Challenge name when it is already a short DNS-1035 label; otherwise a readable prefix of it
 * plus a hash of the whole name, so two long names that share a prefix still get different children.
 */
export function instanceBaseName(challengeName: string): string {
  if (challengeName.length <= MAX_BASE && DNS_1035_LABEL.test(challengeName)) return challengeName
  const hash = createHash('sha256').update(challengeName).digest('hex').slice(0, HASH_LENGTH)
  let prefix = challengeName
    .toLowerCase()
    .replace(/[^-a-z0-9]/g, '-')
    .slice(0, MAX_BASE - HASH_LENGTH - 1)
    .replace(/-+$/, '')
  if (!/^[a-z]/.test(prefix)) prefix = `c${prefix}`.slice(0, MAX_BASE - HASH_LENGTH - 1).replace(/-+$/, '')
  return `${prefix}-${hash}`
}

export function childNames(challengeName: string): ChildNames {
  const base = instanceBaseName(challengeName)
  return {
    base,
    flagSecret: `${base}-flag`,
    isolatePolicy: `${base}-isolate`,
    exposePolicy: `${base}-expose`,
    internetPolicy: `${base}-internet`,
  }
}
