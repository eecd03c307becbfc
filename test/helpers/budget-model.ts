/**
 * The owner budget as docs/api.md states it ("Lifecycle rules", Budget), written as a model of its own for the
 * property tests (test/fuzz/budget.test.ts); it imports nothing from src/. An owner holds at most OWNER_BUDGET cost
 * units of admitted instances; every instance of the owner computes the same order; started instances keep their
 * slots and the others fill what is left first fit; a sibling's cost is its status.cost, and an unknown one that
 * counts before this instance makes it wait; a free instance always fits; Error, Deleted, Stopped, terminating and
 * not-yet-available instances hold nothing; a relaunched one competes as a newcomer. The owner's instances are those
 * of the Challenge's namespace (OWNER_BUDGET_SCOPE=Namespace) or of every namespace (Cluster, with hook version v2);
 * with None there is no budget: every instance is admitted, whatever its cost and its siblings.
 */

/** A sibling Challenge as the customize hook relates it, in the terms the contract uses. */
export interface SiblingFacts {
  namespace: string
  name: string
  ownerKind: string
  ownerId: string
  createdAt?: number
  deleting: boolean
  stopped: boolean
  restarts: number
  phase?: string
  reason?: string
  run: number
  admittedAt?: number
  startedAt?: number
  /** status.cost as written: only a whole number of units ≥ 0 is a cost */
  cost?: unknown
}

export interface SelfFacts {
  namespace: string
  name: string
  ownerKind: string
  ownerId: string
  createdAt?: number
  /** from the previous status, while the instance is admitted and has not started */
  admittedAt?: number
  cost: number
}

export type BudgetVerdict =
  | { phase: 'Error'; reason: 'OwnerBudgetExceeded' }
  | { phase: 'Pending'; reason: 'Starting' }
  | { phase: 'Pending'; reason: 'Queued'; held: number | undefined }

interface Entry {
  key: string
  admittedAt: number
  createdAt: number
  cost: number | undefined
  started: boolean
  self: boolean
}

const knownCost = (cost: unknown): number | undefined =>
  typeof cost === 'number' && Number.isInteger(cost) && cost >= 0 ? cost : undefined

/** Whether a sibling holds or waits for budget at all, and how it competes. */
function entryOf(sibling: SiblingFacts, self: SelfFacts, scope: BudgetScope): Entry | undefined {
  // The budget is per namespace (OWNER_BUDGET_SCOPE=Namespace, the default), or across every namespace (Cluster).
  if (scope === 'Namespace' && sibling.namespace !== self.namespace) return undefined
  if (sibling.ownerKind !== self.ownerKind || sibling.ownerId !== self.ownerId) return undefined
  if (sibling.namespace === self.namespace && sibling.name === self.name) return undefined
  if (sibling.deleting || sibling.stopped) return undefined
  // A relaunch (spec.restarts above its run) competes as a newcomer, whatever its old run's phase and admission.
  const relaunching = sibling.restarts > sibling.run
  if (
    !relaunching &&
    (sibling.phase === 'Error' ||
      sibling.phase === 'Deleted' ||
      sibling.phase === 'Terminating' ||
      sibling.reason === 'NotYetAvailable')
  )
    return undefined
  return {
    key: `${sibling.namespace}/${sibling.name}`,
    admittedAt: relaunching ? Infinity : (sibling.admittedAt ?? Infinity),
    createdAt: sibling.createdAt ?? Infinity,
    cost: knownCost(sibling.cost),
    started: !relaunching && sibling.startedAt !== undefined,
    self: false,
  }
}

/** OWNER_BUDGET_SCOPE */
export type BudgetScope = 'Namespace' | 'Cluster' | 'None'

export function budgetVerdict(
  self: SelfFacts,
  siblings: readonly SiblingFacts[],
  budget: number,
  scope: BudgetScope = 'Namespace',
): BudgetVerdict {
  if (scope === 'None') return { phase: 'Pending', reason: 'Starting' }
  if (self.cost > budget) return { phase: 'Error', reason: 'OwnerBudgetExceeded' }
  if (self.cost === 0) return { phase: 'Pending', reason: 'Starting' }
  const me: Entry = {
    key: `${self.namespace}/${self.name}`,
    admittedAt: self.admittedAt ?? Infinity,
    createdAt: self.createdAt ?? Infinity,
    cost: self.cost,
    started: false,
    self: true,
  }
  // The order every instance computes: earliest admittedAt, then creationTimestamp, then namespace/name.
  const order = [me, ...siblings.flatMap((sibling) => entryOf(sibling, self, scope) ?? [])].sort(
    (a, b) => a.admittedAt - b.admittedAt || a.createdAt - b.createdAt || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
  )
  const ahead = order.slice(0, order.indexOf(me))
  const counted = [...order.filter((entry) => entry.started), ...ahead]
  if (counted.some((entry) => entry.cost === undefined)) return { phase: 'Pending', reason: 'Queued', held: undefined }
  let held = order.filter((entry) => entry.started).reduce((sum, entry) => sum + (entry.cost as number), 0)
  for (const entry of ahead) if (!entry.started && held + (entry.cost as number) <= budget) held += entry.cost as number
  return held + self.cost <= budget
    ? { phase: 'Pending', reason: 'Starting' }
    : { phase: 'Pending', reason: 'Queued', held }
}

/** The words of a Queued status: what the owner holds and what this instance needs (docs/api.md, Budget). */
export function queuedMessage(held: number | undefined, budget: number, cost: number): string {
  if (held === undefined) return 'Waiting for your other instances to report their cost.'
  const units = budget === 1 ? '1 unit' : `${budget} units`
  return `Waiting for another of your instances to end: ${held} of your ${units} ${held === 1 ? 'is' : 'are'} in use, and this challenge needs ${cost}.`
}
