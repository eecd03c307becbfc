/**
 * The owner budget: whether an instance may hold its slot, decided from the instance and its owner's other
 * Challenges alone (the related objects of the customize hook), in the same order by every instance of the owner.
 */
import type { KubeObject } from '../protocol.js'
import { Phase, Reason } from './api.js'
import { isBeingDeleted } from './observed.js'
import type { OwnerKey } from './secrets.js'
import { parseTime } from './time.js'

/** The instance, who owns it, and the Challenges the customize hook related (the owner's, by label). */
export interface OwnerWorld {
  challenge: KubeObject
  ownerKey: OwnerKey
  siblings: readonly KubeObject[]
}

interface Candidate {
  name: string
  admittedAt: number
  createdAt: number
  /** Its `status.cost`; undefined until its first sync writes it (or when an older release synced it last). */
  cost: number | undefined
  /** Started: it holds its slot whatever the order says. */
  started: boolean
}

function spec(object: KubeObject): Record<string, unknown> {
  return (object.spec ?? {}) as Record<string, unknown>
}

function nested(object: unknown, key: string): unknown {
  return typeof object === 'object' && object !== null ? (object as Record<string, unknown>)[key] : undefined
}

/** A sibling holds or waits for budget unless it is ending, stopped, finished or not yet released. */
function siblingCandidate(sibling: KubeObject, ownerKey: OwnerKey): Candidate | undefined {
  const siblingSpec = spec(sibling)
  const owner = siblingSpec.owner
  if (nested(owner, 'kind') !== ownerKey.ownerKind || nested(owner, 'id') !== ownerKey.ownerId) return undefined
  if (isBeingDeleted(sibling) || siblingSpec.desiredState === 'Stopped') return undefined
  const status = sibling.status
  const phase = nested(status, 'phase')
  const run = nested(status, 'run')
  const restarts = siblingSpec.restarts
  const relaunching = typeof restarts === 'number' && restarts > (typeof run === 'number' ? run : 0)
  if (!relaunching && (phase === Phase.Error || phase === Phase.Deleted || phase === Phase.Terminating)) return undefined
  if (!relaunching && nested(status, 'reason') === Reason.NotYetAvailable) return undefined
  const admittedAt = relaunching ? undefined : parseTime(nested(status, 'admittedAt') as string | undefined)
  const cost = nested(status, 'cost')
  return {
    name: sibling.metadata.name,
    admittedAt: admittedAt ?? Infinity,
    createdAt: parseTime(sibling.metadata.creationTimestamp) ?? Infinity,
    cost: Number.isInteger(cost) && (cost as number) >= 0 ? (cost as number) : undefined,
    started: !relaunching && parseTime(nested(status, 'startedAt') as string | undefined) !== undefined,
  }
}

/**
 * Deterministic admission: every instance of the owner computes the same order (earliest admittedAt, then
 * creationTimestamp, then name). Started instances hold their slots; the others fill what is left first-fit
 * in that order, so two concurrent creates cannot both win and a big waiting instance does not block a small one.
 * A sibling's cost is its own `status.cost` (the catalogue is not in the request). One whose cost is not written
 * yet and that counts before this instance (started, or earlier in the order) makes it wait: its first sync
 * writes the cost within moments and that write re-syncs this instance; guessing could admit both.
 */
export function admittedByBudget(owner: OwnerWorld, cost: number, budget: number, admittedAt: number | undefined): boolean {
  const self: Candidate = {
    name: owner.challenge.metadata.name,
    admittedAt: admittedAt ?? Infinity,
    createdAt: parseTime(owner.challenge.metadata.creationTimestamp) ?? Infinity,
    cost,
    started: false,
  }
  const candidates = [self]
  for (const sibling of owner.siblings) {
    if (sibling.metadata.name === self.name) continue
    const candidate = siblingCandidate(sibling, owner.ownerKey)
    if (candidate) candidates.push(candidate)
  }
  candidates.sort(
    // Names are unique among the owner's Challenges of one namespace, so the order is total.
    (a, b) => a.admittedAt - b.admittedAt || a.createdAt - b.createdAt || (a.name < b.name ? -1 : 1),
  )
  // A free challenge holds nothing, so it always fits.
  if (self.cost === 0) return true
  const before = candidates.slice(0, candidates.indexOf(self))
  if ([...candidates.filter((candidate) => candidate.started), ...before].some((candidate) => candidate.cost === undefined)) return false
  let used = 0
  for (const candidate of candidates) if (candidate.started) used += candidate.cost as number
  for (const candidate of before) {
    const cost = candidate.cost as number
    if (!candidate.started && used + cost <= budget) used += cost
  }
  return used + (self.cost as number) <= budget
}
