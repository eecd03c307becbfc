// Where an instance's start goes: when the bench first saw each step of it, from the objects themselves (the
// Challenge's status and its pod's), so the same breakdown is measured whatever the hook renders (a Deployment's
// pod or a bare Pod). Steps, in order:
//
//   created ─► admitted ─► scheduled ─► started ─► ready ─► Running
//   (create)   (status      (pod bound   (a container (pod Ready) (status
//               admittedAt)  to a node)   running)                 phase Running: the endpoint exists)
//
// Each phase is the time between two steps as the bench's watches saw them (milliseconds, not the whole seconds
// the status holds).
import type { KubeObject } from '../../test/support/simulator/index.js'
import { percentile } from './measure.js'

const INSTANCE = 'challenge-hooks.dev/instance'
export const PHASES = [
  ['queue', 'created', 'admitted'],
  ['admittedToScheduled', 'admitted', 'scheduled'],
  ['scheduledToStarted', 'scheduled', 'started'],
  ['startedToReady', 'started', 'ready'],
  ['readyToEndpoint', 'ready', 'running'],
] as const
type Step = 'admitted' | 'scheduled' | 'started' | 'ready' | 'running'

type Loose = Record<string, unknown>
const record = (value: unknown): Loose => (typeof value === 'object' && value !== null ? (value as Loose) : {})
const list = (value: unknown): Loose[] => (Array.isArray(value) ? value.map(record) : [])

export class Steps {
  /** by Challenge name (its instance label is its name in the rush: short DNS labels) */
  readonly #seen = new Map<string, Partial<Record<Step, number>>>()

  #mark(name: string, step: Step): void {
    const steps = this.#seen.get(name) ?? {}
    steps[step] ??= Date.now()
    this.#seen.set(name, steps)
  }

  challenge(object: KubeObject): void {
    const status = record(object.status)
    if (typeof status.admittedAt === 'string') this.#mark(object.metadata.name, 'admitted')
    if (status.phase === 'Running') this.#mark(object.metadata.name, 'running')
  }

  pod(object: KubeObject): void {
    const name = object.metadata.labels?.[INSTANCE]
    if (name === undefined || object.metadata.deletionTimestamp !== undefined) return
    const spec = record(object.spec)
    const status = record(object.status)
    if (typeof spec.nodeName === 'string' && spec.nodeName !== '') this.#mark(name, 'scheduled')
    if (list(status.containerStatuses).some((container) => record(container.state).running !== undefined))
      this.#mark(name, 'started')
    if (list(status.conditions).some((condition) => condition.type === 'Ready' && condition.status === 'True'))
      this.#mark(name, 'ready')
  }

  /** p50 / p95 / p99 of each phase (seconds), over the instances that reached Running. */
  breakdown(createdAt: Map<string, number>): Record<string, { p50: number; p95: number; p99: number; count: number }> {
    const result: Record<string, { p50: number; p95: number; p99: number; count: number }> = {}
    for (const [phase, from, to] of PHASES) {
      const durations: number[] = []
      for (const [name, steps] of this.#seen) {
        const start = from === 'created' ? createdAt.get(name) : steps[from]
        const end = steps[to]
        if (start !== undefined && end !== undefined && steps.running !== undefined)
          durations.push(Math.max(0, end - start) / 1000)
      }
      const round = (value: number) => Math.round(value * 100) / 100
      result[phase] = {
        p50: round(percentile(durations, 50)),
        p95: round(percentile(durations, 95)),
        p99: round(percentile(durations, 99)),
        count: durations.length,
      }
    }
    return result
  }
}
