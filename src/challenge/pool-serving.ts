/**
 * How an admitted run is served when its definition keeps a warm pool (docs/api.md#warm-pools): it waits for the
 * pool to hand it a pod, it is served by the pod it was handed for the rest of the run, or it runs a pod of its own
 * (cold), as without a pool. The pool's hook (pool-claims.ts) hands pods out; this side only reads what it did:
 * the flag Secrets of the pods claimed for this Challenge, which the customize hook relates. The pool labels a
 * pod's Secret `claimed-by` only once it observes the pod's own claim, which the API server let through only if the
 * pod was free (docs/proposals/warm-pools.md): so a Secret's claim is as sure as its pod's. Secrets, not the pods
 * themselves: Metacontroller weighs every event of a related kind against every Challenge, and Secrets are related
 * already (Static flags), whereas relating pods made each pod status write a scan of every Challenge
 * (docs/design.md). The pool claims only a ready pod, and replaces a claimed one that fails: its Secret then goes
 * too, and the run goes on cold.
 *
 * The record in status.pool makes the choice sticky within a run: a run that went cold never takes a pooled pod
 * later (the pool gives up a claim that lands after that), and a claimed run keeps its pod until the run ends.
 */
import { Label, MANAGED_BY, PoolState, ServedBy } from '../contract/api.js'
import { isBeingDeleted, isOwnedBy, objectsOfKind, type ObservedIndex } from './observed.js'
import { poolNames } from './pool-children.js'
import { readTime } from './time.js'
import { field, record, text } from './untrusted.js'

/** What status.pool records of a run (times in ms). */
export interface PoolRecord {
  state: ServedBy
  run: number
  /** Waiting: since when; Claimed: when the claim was first seen; Cold: when the run went cold. */
  since: number | undefined
  pod: string | undefined
  flagUid: string | undefined
}

/** This sync's serving: the record, and while Claimed the pod's slot; while Waiting, when the wait ends. */
export interface Serving extends PoolRecord {
  slot: string | undefined
  waitUntil: number | undefined
}

const STATES = new Set<string>(Object.values(ServedBy))

/** status.pool as this hook wrote it; anything else reads as no record. */
export function readPoolRecord(value: unknown): PoolRecord | undefined {
  const raw = record(value)
  const state = text(raw?.state)
  const run = raw?.run
  if (state === undefined || !STATES.has(state) || typeof run !== 'number' || !Number.isSafeInteger(run) || run < 0)
    return undefined
  return {
    state: state as ServedBy,
    run,
    since: readTime(raw?.since),
    pod: text(raw?.pod),
    flagUid: text(raw?.flagUid),
  }
}

export interface ServingInput {
  challengeUid: string
  definitionName: string
  /** The observed definition's uid: a claimed pod must be its child. */
  definitionUid: string | undefined
  /** The definition's status.pool.state, as its pool's hook last wrote it. */
  poolState: unknown
  /** The definition keeps a pool. */
  pooled: boolean
  /** The Challenge sets parameters: they are a pod's environment, fixed at its start, so it never takes a pooled one. */
  parameters: boolean
  run: number
  previous: PoolRecord | undefined
  /** A pod of its own exists for this run already. */
  coldPod: boolean
  /** When the run was admitted: a Waiting run waits since then. */
  admittedAt: number
  /** The claim the run's Service records (run-record.ts): its time is the claim's, whatever the status says. */
  recordedClaim: { pod: string; since: number } | undefined
  /** Since when the run's Service says the run has been cold: it is, whatever a lagging status says. */
  recordedColdSince: number | undefined
  related: ObservedIndex
  now: number
  timeoutMs: number
}

/** A claimed pod's flag Secret, as this side reads it. */
interface ClaimedSecret {
  pod: string
  slot: string
  flagUid: string
}

/**
 * The flag Secrets of the pods claimed for this Challenge: children of its definition (a Secret that merely carries
 * the labels is nobody's), not on their way out. Lowest slot first: a lagging view may have handed it two pods, and
 * every sync must pick the same one.
 */
function claimedSecrets(input: ServingInput): ClaimedSecret[] {
  const { definitionUid } = input
  if (definitionUid === undefined) return []
  const claimed: ClaimedSecret[] = []
  for (const secret of objectsOfKind(input.related, 'Secret')) {
    const slot = text(field(secret.metadata.labels, Label.poolSlot))
    const flagUid = text(secret.metadata.uid)
    if (
      slot === undefined ||
      !/^\d{1,4}$/.test(slot) ||
      flagUid === undefined ||
      text(field(secret.metadata.labels, Label.claimedBy)) !== input.challengeUid ||
      !isOwnedBy(secret, definitionUid) ||
      isBeingDeleted(secret)
    )
      continue
    claimed.push({ pod: `${poolNames(input.definitionName).prefix}${slot}`, slot, flagUid })
  }
  return claimed.sort((a, b) => Number(a.slot) - Number(b.slot))
}

function serving(record: PoolRecord, slot?: string, waitUntil?: number): Serving {
  return { ...record, slot, waitUntil }
}

function cold(input: ServingInput, since: number | undefined): Serving {
  return serving({ state: ServedBy.Cold, run: input.run, since, pod: undefined, flagUid: undefined })
}

/** Claimed: since the time the Service records for this pod, else the status's, else now (first seen). */
function claim(input: ServingInput, secret: ClaimedSecret, since: number | undefined): Serving {
  const recorded = input.recordedClaim?.pod === secret.pod ? input.recordedClaim.since : undefined
  const record = {
    state: ServedBy.Claimed,
    run: input.run,
    since: recorded ?? since ?? input.now,
    pod: secret.pod,
    flagUid: secret.flagUid,
  }
  return serving(record, secret.slot)
}

/** How this admitted run is served; undefined when its definition keeps no pool and it never took a pooled pod. */
export function servedBy(input: ServingInput): Serving | undefined {
  const previous = input.previous?.run === input.run ? input.previous : undefined
  if (previous?.state === ServedBy.Released) return serving(previous)
  if (input.recordedColdSince !== undefined) return cold(input, input.recordedColdSince)
  if (previous?.state === ServedBy.Claimed) {
    // Its pod is gone (deleted, failed, its claim taken off by hand), and its Secret with it: the run goes on cold,
    // as a restart would.
    const secret = claimedSecrets(input).find(
      (candidate) => candidate.pod === previous.pod && candidate.flagUid === previous.flagUid,
    )
    return secret === undefined ? cold(input, input.now) : claim(input, secret, previous.since)
  }
  if (previous?.state === ServedBy.Cold) return serving(previous)
  if (!input.pooled) return undefined
  if (input.run > 0 || input.parameters || input.coldPod) return cold(input, input.now)
  const first = claimedSecrets(input)[0]
  if (first !== undefined) return claim(input, first, undefined)
  // A run waits from its admission (the sync that admits it starts the wait): every view of the run agrees on that
  // instant, which a sync's own clock would not. A pool that is not Ready, at the admission or since (its status is
  // written only once every claim it made is on its pod's Secret), has no pod coming: the run goes cold now rather
  // than at the end of the wait.
  const until = input.admittedAt + input.timeoutMs
  if (input.now >= until || input.poolState !== PoolState.Ready) return cold(input, input.now)
  const waiting = {
    state: ServedBy.Waiting,
    run: input.run,
    since: input.admittedAt,
    pod: undefined,
    flagUid: undefined,
  }
  return serving(waiting, undefined, until)
}

/** A record carried as it is, serving nothing this sync. */
export function recordOnly(record: PoolRecord | undefined): Serving | undefined {
  return record === undefined ? undefined : serving(record)
}

/**
 * The record a run that is not served this sync carries: a finished run gives up its pod (Released, naming the pod
 * it had); a run sent back to its owner's queue stops waiting (the pool may give its pod to the next player);
 * otherwise the record stays as it was.
 */
export function carriedRecord(
  previous: PoolRecord | undefined,
  run: number,
  finished: boolean,
): PoolRecord | undefined {
  if (previous === undefined || previous.run !== run) return undefined
  if (previous.state === ServedBy.Claimed && finished) return { ...previous, state: ServedBy.Released }
  if (previous.state === ServedBy.Waiting) return undefined
  return previous
}

/**
 * The labels the instance's Service and expose policy select while it is served from the pool: the pods claimed for
 * it, and once claimed the one it recorded. Only the pool's hook writes `claimed-by`, on its own pods.
 */
export function pooledPodSelector(definition: string, challengeUid: string, slot: string | undefined) {
  return {
    [Label.managedBy]: MANAGED_BY,
    [Label.definition]: definition,
    [Label.claimedBy]: challengeUid,
    ...(slot === undefined ? {} : { [Label.poolSlot]: slot }),
  }
}
