// The simulator's ClusterBackend on a real API server: reads from informer caches (cluster-wide, as
// Metacontroller's), writes over HTTP as whoever the kubeconfig names (Metacontroller's service account in the
// cluster suite, so this project's RBAC is what allows or refuses them), and a clock that is the real one plus an
// offset the tests move forward (the hook server reads the same clock).
import { deepCopy } from '../simulator/json.js'
import type { ClusterBackend } from '../simulator/backend.js'
import type { DeleteOptions, WatchListener } from '../simulator/cluster.js'
import { timestamp } from '../simulator/cluster.js'
import { refOf, resourceByKind, type KubeObject, type ObjectRef, type ResourceType } from '../simulator/objects.js'
import { Informer } from './informer.js'
import { resourcePath, type Rest } from './rest.js'

/** The real clock, moved forward by what tests ask for. Shared by the hook server and the stand-in. */
export class OffsetClock {
  #offsetMs = 0
  now(): Date {
    return new Date(Date.now() + this.#offsetMs)
  }
  advance(seconds: number): void {
    this.#offsetMs += Math.round(seconds * 1000)
  }
  /**
   * Back to the real clock. The API server stamps creationTimestamp in real time: a clock left ahead makes every
   * new object look as old as the offset (a queued instance would expire at once).
   */
  reset(): void {
    this.#offsetMs = 0
  }
}

export class LiveCluster implements ClusterBackend {
  readonly #rest: Rest
  readonly #clock: OffsetClock
  readonly #informers = new Map<string, Informer>()
  readonly #listeners = new Set<WatchListener>()

  private constructor(rest: Rest, clock: OffsetClock) {
    this.#rest = rest
    this.#clock = clock
  }

  /** Starts one informer per resource and resolves once every cache holds its first LIST. */
  static async start(rest: Rest, resources: ResourceType[], clock: OffsetClock): Promise<LiveCluster> {
    const cluster = new LiveCluster(rest, clock)
    for (const resource of resources) {
      const informer = new Informer(rest, resource)
      informer.on((event) => {
        for (const listener of cluster.#listeners)
          listener({ ...event, object: deepCopy(event.object), previous: deepCopy(event.previous) })
      })
      cluster.#informers.set(key(resource.apiVersion, resource.kind), informer)
    }
    await Promise.all([...cluster.#informers.values()].map((informer) => informer.start()))
    return cluster
  }

  close(): void {
    for (const informer of this.#informers.values()) informer.stop()
    this.#listeners.clear()
  }

  now(): Date {
    return this.#clock.now()
  }

  timestamp(): string {
    return timestamp(this.now())
  }

  advance(seconds: number): void {
    this.#clock.advance(seconds)
  }

  get(ref: ObjectRef): KubeObject | undefined {
    return deepCopy(this.#informers.get(key(ref.apiVersion, ref.kind))?.get(ref.namespace, ref.name))
  }

  list(apiVersion: string, kind: string, namespace?: string): KubeObject[] {
    return (this.#informers.get(key(apiVersion, kind))?.list(namespace) ?? []).map((obj) => deepCopy(obj))
  }

  async read(ref: ObjectRef): Promise<KubeObject | undefined> {
    return this.#rest.find<KubeObject>(this.#path(ref))
  }

  async create(obj: KubeObject, manager = 'test'): Promise<KubeObject> {
    const ref = refOf(obj)
    return this.#rest.call('POST', this.#path({ ...ref, name: undefined }), {
      body: obj,
      query: { fieldManager: manager },
    }) as Promise<KubeObject>
  }

  async update(obj: KubeObject, manager = 'test'): Promise<KubeObject> {
    return this.#rest.call('PUT', this.#path(refOf(obj)), {
      body: obj,
      query: { fieldManager: manager },
    }) as Promise<KubeObject>
  }

  async updateStatus(obj: KubeObject, manager = 'test'): Promise<KubeObject> {
    return this.#rest.call('PUT', this.#path(refOf(obj), 'status'), {
      body: obj,
      query: { fieldManager: manager },
    }) as Promise<KubeObject>
  }

  /** Background propagation, as Metacontroller deletes children; the uid as a precondition when given. */
  async delete(ref: ObjectRef, options: DeleteOptions = {}): Promise<KubeObject | undefined> {
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      propagationPolicy: 'Background',
      ...(options.uid === undefined ? {} : { preconditions: { uid: options.uid } }),
      ...(options.gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds: options.gracePeriodSeconds }),
    }
    const answer = (await this.#rest.call('DELETE', this.#path(ref), { body })) as KubeObject | { kind: 'Status' }
    // The API server answers with the object while it lingers (finalizers, grace period), with a Status once gone.
    return answer.kind === 'Status' ? undefined : (answer as KubeObject)
  }

  watch(listener: WatchListener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  #path(ref: Omit<ObjectRef, 'name'> & { name: string | undefined }, subresource?: string): string {
    const resource = resourceByKind(ref.apiVersion, ref.kind)
    if (resource === undefined) throw new Error(`no resource known for ${ref.apiVersion} ${ref.kind}`)
    return resourcePath(resource, ref.namespace, ref.name, subresource)
  }
}

function key(apiVersion: string, kind: string): string {
  return `${apiVersion}|${kind}`
}
