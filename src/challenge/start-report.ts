/**
 * Where a start's time went, read from an answer that makes the instance Running: the status's conditions carry the
 * instant of each step (Admitted, Scheduled, ContainersStarted, WorkloadReady, Ready), so the durations between
 * them need no memory of earlier syncs. The HTTP layer turns the report into per-definition histograms.
 */
import { ConditionType, Phase } from '../contract/api.js'
import { field, list } from './untrusted.js'
import { readTime } from './time.js'

/** The steps of a start, in order; each is the time from the previous instant to its own. */
export const START_PHASES = ['queue', 'scheduling', 'starting', 'readiness', 'endpoint'] as const
export type StartPhase = (typeof START_PHASES)[number]

export interface StartReport {
  namespace: string
  definition: string
  /** Seconds spent in each step; a step without both instants is left out (the queue of a restarted run). */
  seconds: Partial<Record<StartPhase, number>>
  /** From the first instant known (creation for a first run, admission for a restart) to Running, seconds. */
  total: number
}

/** The instants that close each step, in order: the queue closes at admission, the endpoint step at Running. */
const CLOSES: [StartPhase, string][] = [
  ['queue', ConditionType.Admitted],
  ['scheduling', ConditionType.Scheduled],
  ['starting', ConditionType.ContainersStarted],
  ['readiness', ConditionType.WorkloadReady],
  ['endpoint', ConditionType.Ready],
]

function trueSince(status: unknown, type: string): number | undefined {
  const condition = list(field(status, 'conditions')).find(
    (each) => field(each, 'type') === type && field(each, 'status') === 'True',
  )
  return readTime(field(condition, 'lastTransitionTime'))
}

/**
 * The report of a start, when `answered` makes the instance Running and `previous` (the status the request carried)
 * did not: once per start, except when Metacontroller calls again before the status write is seen (rare; a
 * histogram can take it). Undefined otherwise.
 */
export function startReport(
  parent: { metadata: { namespace: string; creationTimestamp?: unknown }; spec: { definitionRef: { name: string } } },
  previous: unknown,
  answered: unknown,
): StartReport | undefined {
  if (field(answered, 'phase') !== Phase.Running) return undefined
  const sameRun = field(previous, 'run') === field(answered, 'run')
  if (sameRun && field(previous, 'phase') === Phase.Running) return undefined
  // A first run waits from its creation; a restart's wait starts at the restart, which no status records.
  const first = field(answered, 'run') === 0 ? readTime(parent.metadata.creationTimestamp) : undefined
  const seconds: Partial<Record<StartPhase, number>> = {}
  let from = first
  for (const [phase, type] of CLOSES) {
    const at = trueSince(answered, type)
    if (from !== undefined && at !== undefined) seconds[phase] = Math.max(0, at - from) / 1000
    from = at
  }
  const start = first ?? trueSince(answered, ConditionType.Admitted)
  const running = trueSince(answered, ConditionType.Ready)
  if (start === undefined || running === undefined) return undefined
  return {
    namespace: parent.metadata.namespace,
    definition: parent.spec.definitionRef.name,
    seconds,
    total: Math.max(0, running - start) / 1000,
  }
}
