/**
 * The owner budget: whether an instance may hold its slot, decided from the instance and its owner's other
 * Challenges alone (the related objects of the customize hook), in the same order by every instance of the owner.
 */
import type { KubeObject } from '../contract/protocol.js'
import { Phase, Reason } from '../contract/api.js'
import { isBeingDeleted } from './observed.js'
import { count, field } from './untrusted.js'
import type { OwnerKey } from './hmac.js'
import { readTime } from './time.js'

/** The instance, who owns it, and the Challenges the customize hook related (the owner's, by label). */
export interface OwnerWorld {
  challenge: KubeObject
  ownerKey: OwnerKey
  siblings: readonly KubeObject[]
}

interface Candidate {
  /** `<namespace>/<name>`: unique among the owner's Challenges, whichever namespaces they are in. */
  key: string
  admittedAt: number
  createdAt: number
  /** Its `status.cost`; undefined until its first sync writes it (or when an older release synced it last). */
  cost: number | undefined
  /** Started: it holds its slot whatever the order says. */
  started: boolean
}

/** An object sent without its namespace is in the instance's. */
function keyOf(object: KubeObject, namespace: string): string {
  return `${object.metadata.namespace ?? namespace}/${object.metadata.name}`
}

/** A sibling holds or waits for budget unless it is ending, stopped, finished or not yet released. */
function siblingCandidate(sibling: KubeObject, ownerKey: OwnerKey): Candidate | undefined {
  const spec = sibling.spec
  const owner = field(spec, 'owner')
  if (field(owner, 'kind') !== ownerKey.ownerKind || field(owner, 'id') !== ownerKey.ownerId) return undefined
  if (isBeingDeleted(sibling) || field(spec, 'desiredState') === 'Stopped') return undefined
  const status = sibling.status
  const phase = field(status, 'phase')
  const relaunching = (count(field(spec, 'restarts')) ?? 0) > (count(field(status, 'run')) ?? 0)
  if (!relaunching && (phase === Phase.Error || phase === Phase.Deleted || phase === Phase.Terminating))
    return undefined
  if (!relaunching && field(status, 'reason') === Reason.NotYetAvailable) return undefined
  const admittedAt = relaunching ? undefined : readTime(field(status, 'admittedAt'))
  return {
    key: keyOf(sibling, ownerKey.namespace),
    admittedAt: admittedAt ?? Infinity,
    createdAt: readTime(sibling.metadata.creationTimestamp) ?? Infinity,
    cost: count(field(status, 'cost')),
    started: !relaunching && readTime(field(status, 'startedAt')) !== undefined,
  }
}

/** Whether the instance may hold its slot; when not, the units its owner's instances ahead of it hold (undefined while one of their costs is unknown). */
export type BudgetCheck = { admitted: true } | { admitted: false; held: number | undefined }

/**
 * Deterministic admission: every instance of the owner computes the same order (earliest admittedAt, then
 * creationTimestamp, then name). Started instances hold their slots; the others fill what is left first-fit
 * in that order, so two concurrent creates cannot both win and a big waiting instance does not block a small one.
 * A sibling's cost is its own `status.cost` (the catalogue is not in the request). One whose cost is not written
 * yet and that counts before this instance (started, or earlier in the order) makes it wait: its first sync
 * writes the cost within moments and that write re-syncs this instance; guessing could admit both.
 */
export function budgetCheck(
  owner: OwnerWorld,
  cost: number,
  budget: number,
  admittedAt: number | undefined,
): BudgetCheck {
  const self: Candidate = {
    key: keyOf(owner.challenge, owner.ownerKey.namespace),
    admittedAt: admittedAt ?? Infinity,
    createdAt: readTime(owner.challenge.metadata.creationTimestamp) ?? Infinity,
    cost,
    started: false,
  }
  const candidates = [self]
  for (const sibling of owner.siblings) {
    if (keyOf(sibling, owner.ownerKey.namespace) === self.key) continue
    const candidate = siblingCandidate(sibling, owner.ownerKey)
    if (candidate) candidates.push(candidate)
  }
  candidates.sort(
    // Keys are unique among the owner's Challenges, so the order is total.
    (a, b) => a.admittedAt - b.admittedAt || a.createdAt - b.createdAt || (a.key < b.key ? -1 : 1),
  )
  // A free challenge holds nothing, so it always fits.
  if (self.cost === 0) return { admitted: true }
  const before = candidates.slice(0, candidates.indexOf(self))
  if (
    [...candidates.filter((candidate) => candidate.started), ...before].some(
      (candidate) => candidate.cost === undefined,
    )
  ) {
    return { admitted: false, held: undefined }
  }
  let used = 0
  for (const candidate of candidates) if (candidate.started) used += candidate.cost as number
  for (const candidate of before) {
    const cost = candidate.cost as number
    if (!candidate.started && used + cost <= budget) used += cost
  }
  return used + cost <= budget ? { admitted: true } : { admitted: false, held: used }
}
