/**
 * The instants a run's Service records (docs/api.md, "The Service records the run's instants"). Metacontroller
 * builds a request from its caches, and in a rush its view of the Challenge can lag its own last status write: a
 * sync that read the older status would stamp the admission (or the claim) with its own clock, Metacontroller would
 * write that over the newer status, and the next sync would write the newer one back, in turn, until the caches
 * caught up. The Service is written in the sync that made the instants, so every sync that observes it takes them
 * from there and all views agree; and a run it says went cold stays cold, as a run never leaves Cold.
 */
import { Annotation, RUN_ANNOTATION, ServedBy } from '../contract/api.js'
import type { ChildNames } from './names.js'
import { ownChild, type ObservedIndex } from './observed.js'
import { readTime } from './time.js'
import { field, text } from './untrusted.js'

export interface RunRecord {
  admittedAt: number | undefined
  /** The pooled pod the run was claimed with, and since when. */
  claim: { pod: string; since: number } | undefined
  /** Since when the run of a pooled definition has been cold. */
  coldSince: number | undefined
}

const NONE: RunRecord = { admittedAt: undefined, claim: undefined, coldSince: undefined }

/** What the Challenge's own Service (not being deleted) records of run `run`; nothing for another run's. */
export function runRecord(children: ObservedIndex, names: ChildNames, challengeUid: string, run: number): RunRecord {
  const service = ownChild(children, 'Service', names.base, challengeUid)
  const annotations = service?.metadata.annotations
  if (text(field(annotations, RUN_ANNOTATION)) !== String(run)) return NONE
  const pod = text(field(annotations, Annotation.poolPod))
  const since = readTime(field(annotations, Annotation.poolSince))
  const state = text(field(annotations, Annotation.poolState))
  return {
    admittedAt: readTime(field(annotations, Annotation.admittedAt)),
    claim: state === ServedBy.Claimed && pod !== undefined && since !== undefined ? { pod, since } : undefined,
    coldSince: state === ServedBy.Cold ? since : undefined,
  }
}
