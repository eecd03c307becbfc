// A kubelet (and the cloud controller's load-balancer job) for a control plane without nodes: the challenge pods
// (Metacontroller creates them) are bound to one stand-in Node and given the status a kubelet would write.
// What happens to a pod is chosen by its images, a naming convention of the tests: an image whose reference
// contains one of the BEHAVIOURS words behaves that way; any other image runs and becomes Ready.
//
//   image "registry.test/crash-loop:1"        -> restarts every CRASH_INTERVAL_MS, waiting CrashLoopBackOff
//   image "registry.test/image-pull-backoff"  -> Pending, waiting ImagePullBackOff
//   image "registry.test/unschedulable"       -> never bound, PodScheduled=False/Unschedulable
//   image "registry.test/invalid-image-name"  -> Pending, waiting InvalidImageName
//   image "registry.test/config-error"        -> Pending, waiting CreateContainerConfigError
//
// A pod being deleted lingers for `lingerMs` (a container shutting down), then is removed (grace period 0), as
// a kubelet confirms a deletion. Without that, a pod bound to a node would never go away.
import type { WatchEvent } from '../simulator/cluster.js'
import type { KubeObject } from '../simulator/objects.js'
import { Informer } from './informer.js'
import type { Json, Rest } from './rest.js'

export const NODE_NAME = 'standin-node'
/** The stand-in node's label: on an existing cluster, a RuntimeClass selecting it keeps real schedulers away. */
export const STANDIN_NODE_LABEL = 'challenge-hooks.dev/standin-node'
export const BEHAVIOURS = [
  'crash-loop',
  'image-pull-backoff',
  'unschedulable',
  'invalid-image-name',
  'config-error',
] as const
export type Behaviour = (typeof BEHAVIOURS)[number] | 'run'

/** Pods this kubelet looks after: those of a challenge instance, and those of a definition's warm pool. */
const INSTANCE_LABEL = 'challenge-hooks.dev/instance'
const POOL_SLOT_LABEL = 'challenge-hooks.dev/pool-slot'
const CRASH_INTERVAL_MS = 400
const MAX_RESTARTS = 6
/** tries of a status write while a pod starts up (startup option) */
const STATUS_ATTEMPTS = 10

export interface KubeletOptions {
  /** how long a deleted pod lingers before it is gone (default 300 ms) */
  lingerMs?: number
  /** LoadBalancer Services get an address (default true) */
  provisionLoadBalancers?: boolean
  /**
   * A pod that runs becomes Ready at once (default), or as a kubelet brings it up: bound, then Pending with
   * ContainerCreating, Running (not ready) after `runningMs`, Ready after `readyMs` (its readiness probe passing);
   * called once per pod, so a benchmark can draw realistic delays.
   */
  startup?: () => { runningMs: number; readyMs: number }
}

interface Container {
  name: string
  image: string
}

export class Kubelet {
  readonly #rest: Rest
  readonly #options: Required<Omit<KubeletOptions, 'startup'>> & Pick<KubeletOptions, 'startup'>
  readonly #pods: Informer
  readonly #services: Informer
  readonly #timers = new Set<NodeJS.Timeout>()
  /** pods (by uid) this kubelet has taken on, and those it is removing */
  readonly #taken = new Set<string>()
  readonly #leaving = new Set<string>()
  /** writes that failed (a pod deleted meanwhile is expected; anything else a test may want to see) */
  readonly errors: string[] = []
  #podIps = 0

  constructor(rest: Rest, options: KubeletOptions = {}) {
    this.#rest = rest
    this.#options = {
      lingerMs: options.lingerMs ?? 300,
      provisionLoadBalancers: options.provisionLoadBalancers ?? true,
      startup: options.startup,
    }
    this.#pods = new Informer(rest, { apiVersion: 'v1', resource: 'pods', kind: 'Pod', statusSubresource: true })
    this.#services = new Informer(rest, {
      apiVersion: 'v1',
      resource: 'services',
      kind: 'Service',
      statusSubresource: true,
    })
  }

  async start(): Promise<void> {
    await this.#ensureNode()
    this.#pods.on((event) => this.#onPod(event))
    this.#services.on((event) => this.#onService(event))
    await Promise.all([this.#pods.start(), this.#services.start()])
    for (const pod of this.#pods.list()) this.#onPod({ type: 'ADDED', object: pod })
    for (const service of this.#services.list()) this.#onService({ type: 'ADDED', object: service })
  }

  stop(): void {
    this.#pods.stop()
    this.#services.stop()
    for (const timer of this.#timers) clearTimeout(timer)
    this.#timers.clear()
  }

  #onPod({ type, object: pod }: WatchEvent): void {
    const labels = pod.metadata.labels ?? {}
    if (type === 'DELETED' || (labels[INSTANCE_LABEL] === undefined && labels[POOL_SLOT_LABEL] === undefined)) return
    const uid = String(pod.metadata.uid)
    if (pod.metadata.deletionTimestamp !== undefined) {
      if (this.#leaving.has(uid)) return
      this.#leaving.add(uid)
      this.#later(this.#options.lingerMs, () => this.#forget(pod))
      return
    }
    if (this.#taken.has(uid)) return
    this.#taken.add(uid)
    void this.#run(pod).catch((error: Error) => this.#note(pod, error))
  }

  async #run(pod: KubeObject): Promise<void> {
    const behaviour = behaviourOf(containersOf(pod))
    const path = `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`
    if (behaviour === 'unschedulable') {
      await this.#patchStatus(path, {
        phase: 'Pending',
        conditions: [
          condition('PodScheduled', 'False', 'Unschedulable', '0/1 nodes are available: 1 Insufficient cpu.'),
        ],
      })
      return
    }
    // A pod already bound here was this node's before a restart of the kubelet: as a kubelet that starts again, it
    // takes the pod back (its containers kept running, so a Ready pod is left as it is) and brings up one that was
    // not Ready yet.
    if ((pod.spec as { nodeName?: string } | undefined)?.nodeName === NODE_NAME) {
      const conditions = (pod.status as { conditions?: Json[] } | undefined)?.conditions ?? []
      if (conditions.some((c) => c.type === 'Ready' && c.status === 'True')) return
    } else
      await this.#rest.call('POST', `${path}/binding`, {
        body: {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name: pod.metadata.name },
          target: { apiVersion: 'v1', kind: 'Node', name: NODE_NAME },
        },
      })
    if (behaviour === 'run' && this.#options.startup !== undefined) return this.#startUp(pod, this.#options.startup())
    await this.#writeStatus(pod, behaviour, 0)
  }

  /** The statuses a kubelet writes while it brings a pod up: ContainerCreating, Running not ready, Ready. */
  async #startUp(pod: KubeObject, { runningMs, readyMs }: { runningMs: number; readyMs: number }): Promise<void> {
    const path = `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`
    const waiting = containersOf(pod).map((c) => ({
      name: c.name,
      image: c.image,
      imageID: '',
      restartCount: 0,
      ready: false,
      started: false,
      state: { waiting: { reason: 'ContainerCreating' } },
    }))
    await this.#patchStatus(path, {
      phase: 'Pending',
      hostIP: '10.255.0.1',
      conditions: [
        condition('PodScheduled', 'True'),
        condition('Initialized', 'True'),
        condition('ContainersReady', 'False', 'ContainersNotReady'),
        condition('Ready', 'False', 'ContainersNotReady'),
      ],
      containerStatuses: waiting,
    })
    const stillThere = () => {
      const current = this.#pods.get(String(pod.metadata.namespace), pod.metadata.name)
      return current !== undefined &&
        current.metadata.uid === pod.metadata.uid &&
        current.metadata.deletionTimestamp === undefined
        ? current
        : undefined
    }
    // A kubelet syncs a pod's status until it is written: a write that fails (an API server too busy to answer
    // in time) is tried again a second later. One write of a pod at a time, in order, and none of "not ready" once
    // "ready" is written (a kubelet's status manager writes a pod's latest status): on a loaded API server a write
    // can take seconds, and the earlier one landing last left a pod Running but never Ready.
    let writes = Promise.resolve()
    let ready = false
    const write = (probed: boolean, attempt = 1) => {
      writes = writes.then(async () => {
        const current = stillThere()
        if (current === undefined || (ready && !probed)) return
        try {
          await this.#writeStatus(current, 'run', 0, probed)
          if (probed) ready = true
        } catch (error) {
          if (attempt < STATUS_ATTEMPTS && (error as { reason?: string }).reason !== 'NotFound')
            this.#later(1000, () => write(probed, attempt + 1))
          else this.#note(pod, error as Error)
        }
      })
    }
    this.#later(runningMs, () => write(false))
    this.#later(Math.max(readyMs, runningMs + 1), () => write(true))
  }

  async #writeStatus(pod: KubeObject, behaviour: Behaviour, restarts: number, probed = true): Promise<void> {
    const path = `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')
    const containers = containersOf(pod)
    const ready = behaviour === 'run' && probed
    const readiness = ready ? 'True' : 'False'
    this.#podIps = (this.#podIps % 250) + 1
    const status: Json = {
      phase: behaviour === 'run' || behaviour === 'crash-loop' ? 'Running' : 'Pending',
      hostIP: '10.255.0.1',
      podIP: `10.244.0.${this.#podIps}`,
      startTime: now,
      conditions: [
        condition('PodScheduled', 'True'),
        condition('Initialized', 'True'),
        condition('ContainersReady', readiness, ready ? undefined : 'ContainersNotReady'),
        condition('Ready', readiness, ready ? undefined : 'ContainersNotReady'),
      ],
      containerStatuses: containers.map((container) => containerStatus(container, behaviour, restarts, now, ready)),
    }
    await this.#patchStatus(path, status)
    if (behaviour === 'crash-loop' && restarts < MAX_RESTARTS) {
      this.#later(CRASH_INTERVAL_MS, () => {
        const current = this.#pods.get(String(pod.metadata.namespace), pod.metadata.name)
        if (
          current === undefined ||
          current.metadata.uid !== pod.metadata.uid ||
          current.metadata.deletionTimestamp !== undefined
        )
          return
        void this.#writeStatus(current, behaviour, restarts + 1).catch((error: Error) => this.#note(pod, error))
      })
    }
  }

  async #patchStatus(path: string, status: Json): Promise<void> {
    await this.#rest.call('PATCH', `${path}/status`, {
      body: { status },
      contentType: 'application/merge-patch+json',
      query: { fieldManager: 'kubelet' },
    })
  }

  /** The kubelet confirms the deletion: the pod object goes away. */
  async #forget(pod: KubeObject): Promise<void> {
    try {
      await this.#rest.call('DELETE', `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`, {
        body: {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          gracePeriodSeconds: 0,
          preconditions: { uid: pod.metadata.uid },
        },
      })
    } catch (error) {
      this.#note(pod, error as Error)
    }
  }

  #onService({ type, object: service }: WatchEvent): void {
    const spec = service.spec as { type?: string } | undefined
    const ingress = ((service.status as Json | undefined)?.loadBalancer as Json | undefined)?.ingress
    if (
      type === 'DELETED' ||
      !this.#options.provisionLoadBalancers ||
      spec?.type !== 'LoadBalancer' ||
      ingress !== undefined
    )
      return
    const address = `203.0.113.${(hash(`${service.metadata.namespace}/${service.metadata.name}`) % 250) + 1}`
    const path = `/api/v1/namespaces/${service.metadata.namespace}/services/${service.metadata.name}/status`
    void this.#rest
      .call('PATCH', path, {
        body: { status: { loadBalancer: { ingress: [{ ip: address, ipMode: 'VIP' }] } } },
        contentType: 'application/merge-patch+json',
      })
      .catch((error: Error) => this.#note(service, error))
  }

  async #ensureNode(): Promise<void> {
    if ((await this.#rest.find(`/api/v1/nodes/${NODE_NAME}`)) !== undefined) return
    await this.#rest.call('POST', '/api/v1/nodes', {
      body: {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: NODE_NAME, labels: { 'kubernetes.io/hostname': NODE_NAME, [STANDIN_NODE_LABEL]: 'true' } },
      },
    })
  }

  #later(ms: number, action: () => void | Promise<void>): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer)
      void action()
    }, ms)
    this.#timers.add(timer)
  }

  #note(obj: KubeObject, error: Error): void {
    // A pod or Service deleted while we wrote to it is what a real kubelet sees too.
    if ((error as { reason?: string }).reason === 'NotFound' || (error as { reason?: string }).reason === 'Conflict')
      return
    this.errors.push(`${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name}: ${error.message}`)
  }
}

export function behaviourOf(containers: Container[]): Behaviour {
  for (const behaviour of BEHAVIOURS) if (containers.some((c) => c.image.includes(behaviour))) return behaviour
  return 'run'
}

function containersOf(pod: KubeObject): Container[] {
  return (pod.spec as { containers?: Container[] } | undefined)?.containers ?? []
}

function condition(type: string, status: string, reason?: string, message?: string): Json {
  return {
    type,
    status,
    lastProbeTime: null,
    lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
  }
}

function containerStatus(
  container: Container,
  behaviour: Behaviour,
  restarts: number,
  now: string,
  podReady: boolean,
): Json {
  const base = {
    name: container.name,
    image: container.image,
    imageID: '',
    restartCount: 0,
    ready: false,
    started: false,
  }
  // Only the container whose image asks for trouble is in trouble; the others run.
  const own = behaviourOf([container])
  switch (own) {
    case 'run':
      return {
        ...base,
        imageID: `${container.image}@sha256:${'0'.repeat(64)}`,
        ready: podReady,
        started: true,
        state: { running: { startedAt: now } },
      }
    case 'crash-loop':
      return {
        ...base,
        restartCount: restarts,
        state: {
          waiting: { reason: 'CrashLoopBackOff', message: `back-off restarting failed container ${container.name}` },
        },
        lastState: { terminated: { exitCode: 1, reason: 'Error', startedAt: now, finishedAt: now } },
      }
    case 'image-pull-backoff':
      return {
        ...base,
        state: { waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${container.image}"` } },
      }
    case 'invalid-image-name':
      return {
        ...base,
        state: {
          waiting: { reason: 'InvalidImageName', message: `Failed to apply default image tag "${container.image}"` },
        },
      }
    case 'config-error':
      return {
        ...base,
        state: { waiting: { reason: 'CreateContainerConfigError', message: 'secret "missing" not found' } },
      }
    default:
      return base
  }
}

function hash(text: string): number {
  let h = 0
  for (const char of text) h = (h * 31 + char.charCodeAt(0)) >>> 0
  return h
}
