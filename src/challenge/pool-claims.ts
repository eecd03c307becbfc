/**
 * A definition's warm pool, decided from its observed pooled pods and its Challenges alone: which pods it keeps,
 * which free pod it claims for which waiting Challenge, which pods it gives up and which it makes to refill.
 *
 * One rule makes a pooled instance serve one player at most: a claim, once observed on a pod, is answered unchanged
 * for as long as the pod is answered, and never written on a pod that carries one. Metacontroller writes a claim with
 * an update the API server refuses when the pod changed since the view the hook was shown (a compare-and-swap:
 * docs/proposals/warm-pools.md), so a claim made from a stale view lands only on a pod that really was free. A stale
 * view may still hand one Challenge two pods; the Challenge records the first it sees and the others are given up.
 */

/** A pooled pod as the pool's hook observes it. */
export interface PoolPod {
  name: string
  /** The rendering of the definition it was made from: a free pod of another rendering is drained, never claimed. */
  rendering: string
  /** Ready: it passes its readiness probe, so a claim of it is reachable at once. */
  ready: boolean
  /** Being deleted: never answered again, but its name stays taken until it is gone. */
  deleting: boolean
  /** The uid of the Challenge it was claimed for; undefined while free. */
  claimedBy: string | undefined
}

/** A Challenge of the definition, as its status tells the pool. */
export interface PoolChallenge {
  uid: string
  name: string
  /** Admitted for the current run, with no pod of its own and none recorded: it asks the pool for one. */
  waiting: boolean
  /** The pooled pod its status records as its own for the current run. */
  recordedPod: string | undefined
  /** Who waited first is served first: admission, then creation (ms), then the name. */
  admittedAt: number
  createdAt: number
}

export interface PoolSpec {
  /** Free pods to keep warm. */
  size: number
  /** The most pods the pool holds at once, claimed ones included: its cost's ceiling. */
  maxPods: number
  /** The definition's rendering today. */
  rendering: string
  /** False once the definition closes or goes away: no free pod is kept or made. */
  open: boolean
  /** New pods are named `<prefix><n>`, n the smallest number no observed pod's name holds. */
  prefix: string
}

export interface PlannedPod {
  name: string
  rendering: string
  claimedBy: string | undefined
}

export interface PoolPlan {
  /** Every pod to answer: the kept ones, with their claims (those made now included), then the new ones. */
  pods: PlannedPod[]
  /** The claims made by this answer, as [pod, Challenge uid]. */
  claims: [pod: string, challenge: string][]
  /** For the definition's status: free and ready, claimed, free and not ready yet (new ones included). */
  counts: { free: number; claimed: number; starting: number }
}

/** Code-point order (a name is ASCII), the same on every replica whatever its locale. */
const byName = (a: { name: string }, b: { name: string }) => Number(a.name > b.name) - Number(a.name < b.name)

function servedFirst(a: PoolChallenge, b: PoolChallenge): number {
  return a.admittedAt - b.admittedAt || a.createdAt - b.createdAt || byName(a, b)
}

/**
 * A claimed pod stays while its Challenge may still take it: the Challenge records it, or records none yet and
 * still waits (the claim may have landed after its last sync). A Challenge gone, recording another pod, or no
 * longer waiting (stopped, ended, started a new run cold) gives it up.
 */
function claimHeld(pod: PoolPod, challenges: ReadonlyMap<string, PoolChallenge>): boolean {
  const holder = challenges.get(pod.claimedBy as string)
  if (holder === undefined) return false
  return holder.recordedPod === undefined ? holder.waiting : holder.recordedPod === pod.name
}

export function planPool(spec: PoolSpec, observed: readonly PoolPod[], challenges: readonly PoolChallenge[]): PoolPlan {
  const byUid = new Map(challenges.map((challenge) => [challenge.uid, challenge]))
  const live = observed.filter((pod) => !pod.deleting).sort(byName)
  const claimed = live.filter((pod) => pod.claimedBy !== undefined && claimHeld(pod, byUid))
  const free = live.filter((pod) => pod.claimedBy === undefined && spec.open && pod.rendering === spec.rendering)

  const served = new Set(claimed.map((pod) => pod.claimedBy))
  const waiters = challenges
    .filter((challenge) => challenge.waiting && challenge.recordedPod === undefined && !served.has(challenge.uid))
    .sort(servedFirst)
  const claimable = free.filter((pod) => pod.ready)
  const claims: [string, string][] = []
  for (const [index, pod] of claimable.entries()) {
    const waiter = waiters[index]
    if (waiter === undefined) break
    claims.push([pod.name, waiter.uid])
  }
  const claimOf = new Map(claims)

  // What stays free: the ready ones first, up to the size and within the ceiling. A pool made smaller gives up the
  // rest (a pod claimed meanwhile from a newer view may go with them: its player then starts cold).
  const claimedNow = claimed.length + claims.length
  const keepFree = spec.open ? Math.max(0, Math.min(spec.size, spec.maxPods - claimedNow)) : 0
  const stillFree = free
    .filter((pod) => !claimOf.has(pod.name))
    .sort((a, b) => Number(b.ready) - Number(a.ready) || byName(a, b))
    .slice(0, keepFree)
  const kept: PlannedPod[] = [...claimed, ...free.filter((pod) => claimOf.has(pod.name)), ...stillFree]
    .sort(byName)
    .map((pod) => ({ name: pod.name, rendering: pod.rendering, claimedBy: pod.claimedBy ?? claimOf.get(pod.name) }))
  const made = newNames(spec.prefix, observed, keepFree - stillFree.length).map((name) => ({
    name,
    rendering: spec.rendering,
    claimedBy: undefined,
  }))
  const readyFree = stillFree.filter((pod) => pod.ready).length
  return {
    pods: [...kept, ...made],
    claims,
    counts: { free: readyFree, claimed: claimedNow, starting: stillFree.length - readyFree + made.length },
  }
}

/** The `count` smallest names `<prefix><n>` that no observed pod holds, a pod being deleted included. */
function newNames(prefix: string, observed: readonly PoolPod[], count: number): string[] {
  const taken = new Set(observed.map((pod) => pod.name))
  const names: string[] = []
  for (let n = 0; names.length < count; n++) if (!taken.has(`${prefix}${n}`)) names.push(`${prefix}${n}`)
  return names
}
