/**
 * What the answers say about the instances, as metrics: where each start's time went (per definition), how often
 * instances enter each phase, and the phase each instance was last answered with.
 *
 * The hook holds no state a decision depends on; these series are only a record of its answers. With several
 * replicas each one exports the instances it answered, with the time it answered them: the newest answer per
 * instance is the current one (`topk by (namespace, challenge) (1, …)`, as the shipped recording rule does), so the
 * sum over replicas never counts an instance twice.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import { ConditionType, Phase } from '../contract/api.js'
import { field, list } from '../challenge/untrusted.js'
import { START_PHASES, startReport, type StartReport } from '../challenge/start-report.js'
import { readTime } from '../challenge/time.js'
import type { SyncRequest, SyncResponse } from '../contract/protocol.js'
import { reasonLabel } from './reason-label.js'

/** An instance not answered for this long is dropped (another replica answers it, or it is gone). */
export const INSTANCE_TTL_MS = 60 * 60 * 1000
/** At most this many instances are remembered; the least recently answered go first. */
export const MAX_INSTANCES = 50_000

interface Instance {
  namespace: string
  challenge: string
  definition: string
  phase: string
  reason: string
  answeredAt: number
  /** Pending answers: since when the instance has not been Ready (its Ready condition's transition). */
  pendingSince: number | undefined
}

export interface InstanceMetrics {
  /** Records one sync or finalize answer. */
  observe(request: SyncRequest, answer: SyncResponse, now: Date): void
}

const START_BUCKETS = [0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600, 1800]

function pendingSince(status: unknown): number | undefined {
  const ready = list(field(status, 'conditions')).find((each) => field(each, 'type') === ConditionType.Ready)
  return readTime(field(ready, 'lastTransitionTime'))
}

export function createInstanceMetrics(registry: Registry, clock: () => Date): InstanceMetrics {
  const instances = new Map<string, Instance>()
  const series = answerSeries(registry)
  registerInstanceGauges(registry, instances, clock)
  return {
    observe(request, answer, now) {
      const { parent } = request
      const uid = parent.metadata.uid
      if (answer.finalized === true) {
        instances.delete(uid)
        return
      }
      const previous = parent.status
      const phase = String(answer.status.phase)
      const reason = String(answer.status.reason)
      if (phase !== field(previous, 'phase') || reason !== field(previous, 'reason'))
        series.transitions.inc({ phase, reason: reasonLabel(reason) })
      recordStart(series, startReport(parent, previous, answer.status))
      instances.delete(uid)
      instances.set(uid, {
        namespace: parent.metadata.namespace,
        challenge: parent.metadata.name,
        definition: parent.spec.definitionRef.name,
        phase,
        reason,
        answeredAt: now.getTime(),
        pendingSince: phase === Phase.Pending ? pendingSince(answer.status) : undefined,
      })
      prune(instances, now.getTime())
    },
  }
}

/** The series an answer adds to: where a start's time went, and the phases entered. */
interface AnswerSeries {
  startPhase: Histogram<'namespace' | 'definition' | 'phase'>
  start: Histogram<'namespace' | 'definition'>
  transitions: Counter<'phase' | 'reason'>
}

function answerSeries(registry: Registry): AnswerSeries {
  return {
    startPhase: new Histogram({
      name: 'challenge_hooks_start_phase_seconds',
      help: 'Time of each step of a start, per definition: queue (created to admitted, first runs), scheduling (admitted to pod scheduled), starting (scheduled to a container running), readiness (running to ready), endpoint (ready to Running).',
      labelNames: ['namespace', 'definition', 'phase'],
      buckets: START_BUCKETS,
      registers: [registry],
    }),
    start: new Histogram({
      name: 'challenge_hooks_start_seconds',
      help: "Time from a Challenge's creation (a restart: its admission) to Running, per definition.",
      labelNames: ['namespace', 'definition'],
      buckets: START_BUCKETS,
      registers: [registry],
    }),
    transitions: new Counter({
      name: 'challenge_hooks_transitions_total',
      help: 'Answers that move an instance to another phase or reason, by the phase and reason entered.',
      labelNames: ['phase', 'reason'],
      registers: [registry],
    }),
  }
}

/** The steps and the whole of a start, when the answer made the instance Running (startReport). */
function recordStart(series: AnswerSeries, report: StartReport | undefined): void {
  if (report === undefined) return
  const labels = { namespace: report.namespace, definition: report.definition }
  for (const step of START_PHASES) {
    const seconds = report.seconds[step]
    if (seconds !== undefined) series.startPhase.observe({ ...labels, phase: step }, seconds)
  }
  series.start.observe(labels, report.total)
}

/** Forgets instances not answered within the TTL, and the oldest past MAX_INSTANCES. Map order is answer order. */
function prune(instances: Map<string, Instance>, now: number): void {
  for (const [uid, instance] of instances) {
    if (now - instance.answeredAt < INSTANCE_TTL_MS && instances.size <= MAX_INSTANCES) break
    instances.delete(uid)
  }
}

/** The gauges read from the remembered instances when Prometheus scrapes. */
function registerInstanceGauges(registry: Registry, instances: Map<string, Instance>, clock: () => Date): void {
  new Gauge({
    name: 'challenge_hooks_instance_answered_timestamp_seconds',
    help: 'When this replica last answered each instance, labelled with the phase and reason it answered.',
    labelNames: ['namespace', 'challenge', 'definition', 'phase', 'reason'],
    registers: [registry],
    collect() {
      prune(instances, clock().getTime())
      this.reset()
      for (const each of instances.values()) {
        const { namespace, challenge, definition, phase, reason } = each
        this.set({ namespace, challenge, definition, phase, reason: reasonLabel(reason) }, each.answeredAt / 1000)
      }
    },
  })
  new Gauge({
    name: 'challenge_hooks_instance_pending_since_timestamp_seconds',
    help: 'For instances this replica last answered Pending: since when they have not been Ready.',
    labelNames: ['namespace', 'challenge', 'definition', 'reason'],
    registers: [registry],
    collect() {
      this.reset()
      for (const each of instances.values()) {
        if (each.pendingSince === undefined) continue
        const { namespace, challenge, definition, reason } = each
        this.set({ namespace, challenge, definition, reason: reasonLabel(reason) }, each.pendingSince / 1000)
      }
    },
  })
}
