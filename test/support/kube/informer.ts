// client-go's informer, reduced: LIST a resource in all namespaces, then WATCH from that resourceVersion, keeping
// a store of raw objects and telling listeners what changed (with the previous state). A watch that ends is
// resumed from the last resourceVersion seen; a 410 Gone (too old) means a fresh LIST.
import { Watch } from '@kubernetes/client-node'
import type { WatchEvent } from '../simulator/cluster.js'
import type { KubeObject, ResourceType } from '../simulator/objects.js'
import { resourcePath, type Rest } from './rest.js'

interface ObjectList {
  metadata: { resourceVersion: string }
  items: KubeObject[]
}

export class Informer {
  readonly resource: ResourceType
  readonly #rest: Rest
  readonly #store = new Map<string, KubeObject>()
  readonly #listeners = new Set<(event: WatchEvent) => void>()
  #resourceVersion = ''
  #abort: AbortController | undefined
  #stopped = false

  constructor(rest: Rest, resource: ResourceType) {
    this.#rest = rest
    this.resource = resource
  }

  /** Resolves once the first LIST is in the store (client-go's WaitForCacheSync). */
  async start(): Promise<void> {
    await this.#list()
    void this.#watch()
  }

  stop(): void {
    this.#stopped = true
    this.#abort?.abort()
  }

  on(listener: (event: WatchEvent) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  get(namespace: string, name: string): KubeObject | undefined {
    return this.#store.get(`${namespace}/${name}`)
  }

  /** Every object, sorted by namespace and name. */
  list(namespace?: string): KubeObject[] {
    return [...this.#store.entries()]
      .filter(([, obj]) => namespace === undefined || obj.metadata.namespace === namespace)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, obj]) => obj)
  }

  async #list(): Promise<void> {
    const list = await this.#rest.get<ObjectList>(resourcePath(this.resource))
    const seen = new Set<string>()
    for (const item of list.items) {
      // List items carry neither apiVersion nor kind; the objects Metacontroller's informers hold do.
      const obj: KubeObject = { ...item, apiVersion: this.resource.apiVersion, kind: this.resource.kind }
      seen.add(keyOf(obj))
      this.#apply('MODIFIED', obj)
    }
    for (const [key, obj] of [...this.#store]) if (!seen.has(key)) this.#apply('DELETED', obj)
    this.#resourceVersion = list.metadata.resourceVersion
  }

  async #watch(): Promise<void> {
    while (!this.#stopped) {
      let gone = false
      const ended = new Promise<void>((resolve) => {
        const watch = new Watch(this.#rest.kubeconfig)
        void watch
          .watch(
            resourcePath(this.resource),
            { resourceVersion: this.#resourceVersion, allowWatchBookmarks: true },
            (type: string, obj: KubeObject) => {
              if (type === 'ERROR') {
                gone = (obj as unknown as { code?: number }).code === 410
                return
              }
              if (obj.metadata?.resourceVersion !== undefined) this.#resourceVersion = obj.metadata.resourceVersion
              if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') this.#apply(type, obj)
            },
            () => resolve(),
          )
          .then((abort) => {
            this.#abort = abort
            if (this.#stopped) abort.abort()
          })
          .catch(() => resolve())
      })
      await ended
      if (this.#stopped) return
      if (gone) await this.#list().catch(() => undefined)
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  #apply(type: WatchEvent['type'], obj: KubeObject): void {
    const key = keyOf(obj)
    const previous = this.#store.get(key)
    if (type === 'DELETED') {
      if (previous === undefined) return
      this.#store.delete(key)
    } else {
      if (previous !== undefined && previous.metadata.resourceVersion === obj.metadata.resourceVersion) return
      this.#store.set(key, obj)
    }
    const event: WatchEvent = { type: type === 'MODIFIED' && previous === undefined ? 'ADDED' : type, object: obj }
    if (previous !== undefined) event.previous = previous
    for (const listener of this.#listeners) listener(event)
  }
}

function keyOf(obj: KubeObject): string {
  return `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`
}
