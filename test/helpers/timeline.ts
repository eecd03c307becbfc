/**
 * One instance's life through the pure `sync`, as Metacontroller and a cluster would play it: each answer's children
 * are created (stamped with the instant they first appeared), kept or deleted as the next request observes them,
 * a pod becomes Ready when the test says, a new run's pod replaces the old one (the Pod rule's Recreate). The
 * platform's buttons change the spec: renew, stop, restart. What the hook answers is read by the test; the
 * timeline only keeps the world Metacontroller would show the next sync.
 */
import { sync } from '../../src/challenge/hooks.js'
import type { Config } from '../../src/config/config.js'
import type { KubeObject, SyncResponse } from '../../src/contract/protocol.js'
import { testConfig } from './app.js'
import { challenge, observedChildren, readyPodStatus, syncRequest, webDefinition, type Json } from './world.js'

/** RFC 3339 at whole seconds, as the API server stores a time. */
export const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

const RUN = 'challenge-hooks.dev/run'

export interface TimelineSpec {
  lifetimeSeconds?: number
  deadline?: number
  renewals: number
  restarts: number
  stopped: boolean
  stopReason?: string
}

interface Observed {
  object: KubeObject
  createdAt: number
  /** for the Pod: Ready since (ms), while it is */
  readyAt?: number
}

const strip = (record: Json): Json =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined))

export class Timeline {
  readonly config: Config
  readonly definition: KubeObject
  spec: TimelineSpec
  status: Json | undefined
  private observed = new Map<string, Observed>()

  constructor(
    definitionSpec: Json,
    spec: Omit<TimelineSpec, 'renewals' | 'restarts' | 'stopped'>,
    config: Partial<Config>,
    readonly createdAt: number,
  ) {
    this.config = testConfig(config)
    const times = Object.fromEntries(
      ['availableFrom', 'availableUntil'].map((key) => [
        key,
        typeof definitionSpec[key] === 'number' ? iso(definitionSpec[key]) : definitionSpec[key],
      ]),
    )
    this.definition = webDefinition(strip({ ...definitionSpec, ...times }))
    this.spec = { ...spec, renewals: 0, restarts: 0, stopped: false }
  }

  /** The observed Pod: its run annotation and since when it is Ready (undefined: not Ready). */
  pod(): { run: number; readyAt?: number } | undefined {
    const pod = this.observed.get('Pod')
    if (pod === undefined) return undefined
    const run = Number(pod.object.metadata.annotations?.[RUN])
    return pod.readyAt === undefined ? { run } : { run, readyAt: pod.readyAt }
  }

  /** Since when the traffic path exists: the later creation of the Service and the route, once both are observed. */
  pathSince(): number | undefined {
    const [service, route] = [this.observed.get('Service'), this.observed.get('Ingress')]
    return service === undefined || route === undefined ? undefined : Math.max(service.createdAt, route.createdAt)
  }

  /** The kubelet reports the observed Pod Ready since `at` (nothing happens without a Pod, or when it already is). */
  ready(at: number): boolean {
    const pod = this.observed.get('Pod')
    if (pod === undefined || pod.readyAt !== undefined) return false
    pod.readyAt = at
    return true
  }

  unready(): boolean {
    const pod = this.observed.get('Pod')
    if (pod?.readyAt === undefined) return false
    delete pod.readyAt
    return true
  }

  /**
   * Someone deletes the observed Service or route (by hand, or a namespace cleanup): the next sync sees none, and
   * its answer has it created again at that sync's instant, after the pod became Ready.
   */
  lose(kind: 'Service' | 'Ingress'): boolean {
    return this.observed.delete(kind)
  }

  /** One sync at `now`; the world then becomes what Metacontroller makes of the answer. */
  sync(now: number): SyncResponse {
    const spec = strip({
      desiredState: this.spec.stopped ? 'Stopped' : 'Running',
      stopReason: this.spec.stopReason,
      lifetimeSeconds: this.spec.lifetimeSeconds,
      deadline: this.spec.deadline === undefined ? undefined : iso(this.spec.deadline),
      renewals: this.spec.renewals,
      restarts: this.spec.restarts,
    })
    const parent = challenge({
      createdAt: iso(this.createdAt),
      spec,
      ...(this.status === undefined ? {} : { status: this.status }),
    })
    const children = [...this.observed.values()].map((each) => this.shown(each))
    const response = sync(syncRequest(parent, { children, related: [this.definition] }), this.config, new Date(now))
    this.status = response.status
    this.apply(response, now)
    return response
  }

  private shown({ object, createdAt, readyAt }: Observed): KubeObject {
    const copy = structuredClone(object)
    copy.metadata.creationTimestamp = iso(createdAt)
    if (copy.kind === 'Pod') {
      const containers = ((copy.spec as Json | undefined)?.containers ?? [{ name: 'web' }]) as Json[]
      copy.status =
        readyAt === undefined
          ? { phase: 'Pending' }
          : readyPodStatus(containers, { scheduled: iso(readyAt), started: iso(readyAt), ready: iso(readyAt) })
    }
    return copy
  }

  /** Metacontroller: every answered child exists (a new one created now), every other one is deleted. */
  private apply(response: SyncResponse, now: number): void {
    const next = new Map<string, Observed>()
    for (const child of observedChildren(response.children)) {
      const key =
        child.kind === 'Pod' || child.kind === 'Service' || child.kind === 'Ingress'
          ? child.kind
          : `${child.kind}/${child.metadata.name}`
      const before = this.observed.get(key)
      // A Pod of another run is a new pod (Recreate), not Ready.
      const same =
        before !== undefined &&
        (child.kind !== 'Pod' || before.object.metadata.annotations?.[RUN] === child.metadata.annotations?.[RUN])
      next.set(key, same ? { ...before, object: child } : { object: child, createdAt: now })
    }
    this.observed = next
  }
}
