/**
 * One player per pooled instance, whatever the timing, as a property over generated orders of events.
 *
 * The model of the world is written from what Metacontroller and the API server do (docs/proposals/warm-pools.md),
 * not from the code under test: the API server keeps the pods and refuses an update made from an older version
 * (409) and a create of a taken name; Metacontroller shows each hook a view of the pods and of the Challenges that
 * lags the API server by any number of writes (each view moving only forward), applies the pool's answer to that
 * view (a claim answered on a pod it shows is an update from the version it shows; a pod it shows and the answer
 * leaves out is deleted, with the pod's uid as the only precondition; a pod the answer names and it does not show
 * is created), and a Challenge records the first pod its own view shows claimed for it. Pods become ready,
 * Challenges arrive, stop and go at any time.
 *
 * At every step: a pod's claim, once written, never changes, a pod is recorded by one Challenge at most, and no
 * Challenge is given a second pod from a view that shows its first (only a stale view wastes a warm pod). Once
 * the world settles (every view current): no Challenge holds two pods, no pod is claimed for a Challenge that is
 * gone, the pool is back to its size, and a Challenge still waiting means no ready pod is free.
 */
import fc from 'fast-check'
import t from 'tap'
import { planPool, type PoolChallenge, type PoolPod, type PoolSpec } from '../../src/challenge/pool-claims.js'
import { runs, SEED } from './world-gen.js'

interface StoredPod {
  uid: number
  version: number
  ready: boolean
  claimedBy: string | undefined
}

interface StoredChallenge {
  name: string
  order: number
  waiting: boolean
  recorded: { name: string; uid: number } | undefined
}

/** The API server: every write makes a new version of the world, which views show later. */
type View = World['history'][number]

class World {
  pods = new Map<string, StoredPod>()
  challenges = new Map<string, StoredChallenge>()
  history: { pods: Map<string, StoredPod>; challenges: Map<string, StoredChallenge> }[] = []
  nextUid = 1
  /** Every claim a pod ever carried, by pod uid, and every Challenge that recorded it. */
  claimsOf = new Map<number, Set<string>>()
  recordersOf = new Map<number, Set<string>>()
  failures: string[] = []

  constructor() {
    this.snapshot()
  }

  /** The world as it is now, which a current view shows. */
  latest(): View {
    return this.history[this.history.length - 1] as View
  }

  /** The world as it was after write `index`. */
  at(index: number): View {
    return this.history[index] as View
  }

  snapshot() {
    const copy = <V>(map: Map<string, V>) => new Map([...map].map(([key, value]) => [key, { ...value }]))
    this.history.push({ pods: copy(this.pods), challenges: copy(this.challenges) })
  }

  writePod(name: string, pod: StoredPod) {
    this.pods.set(name, pod)
    if (pod.claimedBy !== undefined) {
      const claims = this.claimsOf.get(pod.uid) ?? new Set()
      claims.add(pod.claimedBy)
      this.claimsOf.set(pod.uid, claims)
      if (claims.size > 1) this.failures.push(`pod ${name} (uid ${pod.uid}) claimed for ${[...claims].join(' and ')}`)
    }
    this.snapshot()
  }
}

type Event =
  | { kind: 'arrive' }
  | { kind: 'pool'; lag: number }
  | { kind: 'challenge'; which: number; lag: number }
  | { kind: 'ready'; which: number }
  | { kind: 'stop'; which: number }
  | { kind: 'leave'; which: number }

const SPEC: PoolSpec = { size: 3, maxPods: 8, rendering: 'r1', open: true, prefix: 'pool-' }

/** The pool's hook on a view: observed pods with their claims, the Challenges with their status. */
function poolSync(world: World, view: View, spec: PoolSpec) {
  const observed: PoolPod[] = [...view.pods].map(([name, pod]) => ({
    name,
    rendering: 'r1',
    ready: pod.ready,
    deleting: false,
    claimedBy: pod.claimedBy,
  }))
  const challenges: PoolChallenge[] = [...view.challenges].map(([uid, challenge]) => ({
    uid,
    name: challenge.name,
    waiting: challenge.waiting,
    recordedPod: challenge.recorded?.name,
    admittedAt: challenge.order,
    createdAt: challenge.order,
  }))
  const plan = planPool(spec, observed, challenges)
  for (const [pod, uid] of plan.claims) {
    const held = observed.find((each) => each.claimedBy === uid)
    if (held !== undefined) world.failures.push(`${pod} claimed for ${uid}, whose ${held.name} the same view shows`)
  }
  const answered = new Map(plan.pods.map((pod) => [pod.name, pod]))
  for (const [name, seen] of view.pods) {
    const now = world.pods.get(name)
    const wanted = answered.get(name)
    if (wanted === undefined) {
      // Delete with the uid as the only precondition.
      if (now !== undefined && now.uid === seen.uid) {
        world.pods.delete(name)
        world.snapshot()
      }
    } else if (wanted.claimedBy !== seen.claimedBy) {
      // An update from the version shown: refused (409) when the pod changed since, or is gone.
      if (now !== undefined && now.uid === seen.uid && now.version === seen.version)
        world.writePod(name, { ...now, version: now.version + 1, claimedBy: wanted.claimedBy })
    }
  }
  for (const [name, wanted] of answered) {
    if (view.pods.has(name) || world.pods.has(name)) continue // shown (updated above), or a create refused
    world.writePod(name, { uid: world.nextUid++, version: 1, ready: false, claimedBy: wanted.claimedBy })
  }
}

/** A Challenge's hook: it records the first pod (by name) its view shows claimed for it, while it waits. */
function challengeSync(world: World, view: View, uid: string) {
  const challenge = world.challenges.get(uid)
  if (challenge === undefined || !challenge.waiting || challenge.recorded !== undefined) return
  const mine = [...view.pods].filter(([, pod]) => pod.claimedBy === uid).sort(([a], [b]) => (a < b ? -1 : 1))
  const first = mine[0]
  if (first === undefined) return
  const [name, pod] = first
  world.challenges.set(uid, { ...challenge, waiting: false, recorded: { name, uid: pod.uid } })
  const recorders = world.recordersOf.get(pod.uid) ?? new Set()
  recorders.add(uid)
  world.recordersOf.set(pod.uid, recorders)
  if (recorders.size > 1)
    world.failures.push(`pod ${name} (uid ${pod.uid}) recorded by ${[...recorders].join(' and ')}`)
  world.snapshot()
}

function play(events: Event[], spec: PoolSpec = SPEC): { world: World; settled: string[] } {
  const world = new World()
  let arrivals = 0
  // Each controller's view moves only forward (its informer never shows an older world than it did).
  let poolSeen = 0
  const challengeSeen = new Map<string, number>()
  const uids = () => [...world.challenges.keys()]
  const pick = <T>(items: T[], which: number) => (items.length === 0 ? undefined : items[which % items.length])
  const viewAt = (seen: number, lag: number) => Math.max(seen, world.history.length - 1 - lag)
  for (const event of events) {
    if (event.kind === 'arrive') {
      const uid = `c${arrivals}`
      world.challenges.set(uid, { name: `chal-${arrivals}`, order: arrivals++, waiting: true, recorded: undefined })
      world.snapshot()
    } else if (event.kind === 'pool') {
      poolSeen = viewAt(poolSeen, event.lag)
      poolSync(world, world.at(poolSeen), spec)
    } else if (event.kind === 'challenge') {
      const uid = pick(uids(), event.which)
      if (uid === undefined) continue
      const seen = viewAt(challengeSeen.get(uid) ?? 0, event.lag)
      challengeSeen.set(uid, seen)
      challengeSync(world, world.at(seen), uid)
    } else if (event.kind === 'ready') {
      const name = pick([...world.pods.keys()].sort(), event.which)
      if (name === undefined) continue
      const pod = world.pods.get(name) as StoredPod
      if (!pod.ready) world.writePod(name, { ...pod, ready: true, version: pod.version + 1 })
    } else {
      const uid = pick(uids(), event.which)
      if (uid === undefined) continue
      if (event.kind === 'leave') world.challenges.delete(uid)
      // A stop ends the run: its status no longer records a pod, and it waits for none.
      else
        world.challenges.set(uid, {
          ...(world.challenges.get(uid) as StoredChallenge),
          waiting: false,
          recorded: undefined,
        })
      world.snapshot()
    }
  }
  // Settle: every view current, every pod ready, every hook called until nothing changes.
  for (let round = 0; round < 20; round++) {
    const before = world.history.length
    for (const [name, pod] of world.pods)
      if (!pod.ready) world.writePod(name, { ...pod, ready: true, version: pod.version + 1 })
    poolSync(world, world.latest(), spec)
    for (const uid of uids()) challengeSync(world, world.latest(), uid)
    poolSync(world, world.latest(), spec)
    if (world.history.length === before) break
  }
  return { world, settled: settledFailures(world, spec) }
}

function settledFailures(world: World, spec: PoolSpec): string[] {
  const failures: string[] = []
  const holding = new Map<string, string[]>()
  let free = 0
  for (const [name, pod] of world.pods) {
    if (pod.claimedBy === undefined) {
      free++
      continue
    }
    if (!world.challenges.has(pod.claimedBy)) failures.push(`pod ${name} claimed for ${pod.claimedBy}, which is gone`)
    holding.set(pod.claimedBy, [...(holding.get(pod.claimedBy) ?? []), name])
  }
  for (const [uid, names] of holding) if (names.length > 1) failures.push(`${uid} holds ${names.join(' and ')}`)
  const claimed = world.pods.size - free
  const expectedFree = Math.max(0, Math.min(spec.size, spec.maxPods - claimed))
  if (free !== expectedFree) failures.push(`${free} free pods, not ${expectedFree}`)
  const waiting = [...world.challenges.values()].filter((challenge) => challenge.waiting)
  if (waiting.length > 0 && free > 0) failures.push(`${waiting.length} Challenges wait beside ${free} ready free pods`)
  return failures
}

const event: fc.Arbitrary<Event> = fc.oneof(
  { arbitrary: fc.constant<Event>({ kind: 'arrive' }), weight: 3 },
  { arbitrary: fc.nat(6).map<Event>((lag) => ({ kind: 'pool', lag })), weight: 4 },
  {
    arbitrary: fc.record({ which: fc.nat(), lag: fc.nat(6) }).map<Event>((e) => ({ kind: 'challenge', ...e })),
    weight: 4,
  },
  { arbitrary: fc.nat().map<Event>((which) => ({ kind: 'ready', which })), weight: 3 },
  { arbitrary: fc.nat().map<Event>((which) => ({ kind: 'stop', which })), weight: 1 },
  { arbitrary: fc.nat().map<Event>((which) => ({ kind: 'leave', which })), weight: 1 },
)

t.test('a pooled pod is claimed once and recorded by one Challenge, whatever the order and the lag', async (t) => {
  fc.assert(
    fc.property(fc.array(event, { minLength: 10, maxLength: 150, size: 'max' }), (events) => {
      const { world, settled } = play(events)
      t.strictSame([...world.failures, ...settled], [])
      return world.failures.length === 0 && settled.length === 0
    }),
    { numRuns: runs(300), seed: SEED },
  )
})

t.test('50 Challenges for a pool of 10 at its ceiling, arriving at once, every view lagging', async (t) => {
  // Ten ready pods, then fifty arrivals, then syncs of the pool and of each Challenge from views up to 6 writes old.
  const events: Event[] = []
  for (let i = 0; i < 4; i++) events.push({ kind: 'pool', lag: 0 })
  for (let i = 0; i < 50; i++) events.push({ kind: 'arrive' })
  for (let i = 0; i < 400; i++)
    events.push(
      i % 3 === 0 ? { kind: 'pool', lag: i % 7 } : { kind: 'challenge', which: (i * 7) % 50, lag: (i * 5) % 7 },
      { kind: 'ready', which: i },
    )
  const { world, settled } = play(events, { ...SPEC, size: 10, maxPods: 10 })
  t.strictSame([...world.failures, ...settled], [])
  const recorded = [...world.challenges.values()].filter((challenge) => challenge.recorded !== undefined)
  t.strictSame(recorded.length, 10, 'ten served from the pool, the forty others wait to start cold')
  t.strictSame(new Set(recorded.map((challenge) => challenge.recorded?.uid)).size, 10, 'by ten different pods')
})
