/**
 * The gateway's shared view of the API server: one list + watch of a resource per namespace (the informer every
 * controller runs), started on the namespace's first use and kept for the process's life. The events streams
 * subscribe here by name instead of each opening a watch of its own: a watch is a connection to the API server and
 * its buffers, about two thirds of what a stream cost (bench/RESULTS.md, the gateway).
 *
 * The watch carries on from the last resourceVersion when the API server ends it; an ERROR event (410 Gone: that
 * version is too old) lists again and tells subscribers what changed meanwhile; while the API server cannot be
 * reached it tries again after a growing pause and counts as not synced until a list succeeds. A refusal that will
 * not pass (403) or a failure of the code is handed to the subscribers, and the next use starts afresh.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { CHALLENGES_API, Unavailable, type Json, type Kube } from './kube.js'

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED'

export interface Subscriber {
  change(type: ChangeType, object: Json): void
  /** The watch failed for good; the subscriber is dropped. */
  fail(error: Error): void
}

export interface Informer {
  /** True once a list succeeded, until the API server next cannot be reached. */
  readonly synced: boolean
  get(name: string): Json | undefined
  /** Changes of the object `name`; returns the unsubscribe. */
  subscribe(name: string, subscriber: Subscriber): () => void
}

/** The first pause after a failed call, doubled at each failure up to the last. */
const BACKOFF_FIRST_MS = 100
const BACKOFF_LAST_MS = 5000

const versionOf = (object: Json) => (object.metadata as Json | undefined)?.resourceVersion as string | undefined
const nameOf = (object: Json) => (object.metadata as Json).name as string

function informer(kube: Kube, path: string, signal: AbortSignal, onStop: () => void): Informer {
  const items = new Map<string, Json>()
  const subscribers = new Map<string, Set<Subscriber>>()
  let version = ''
  let synced = false

  const notify = (type: ChangeType, object: Json) => {
    for (const subscriber of subscribers.get(nameOf(object)) ?? []) subscriber.change(type, object)
  }

  const apply = (type: string, object: Json) => {
    version = versionOf(object) as string
    if (type === 'BOOKMARK') return
    if (type === 'DELETED') items.delete(nameOf(object))
    else items.set(nameOf(object), object)
    notify(type as ChangeType, object)
  }

  /** A fresh list, and to the subscribers what differs from what they were told. */
  async function list(): Promise<void> {
    const answer = await kube.call('GET', path)
    const fresh = new Map((answer.items as Json[]).map((item) => [nameOf(item), item]))
    for (const [name, old] of items) if (!fresh.has(name)) apply('DELETED', old)
    for (const [name, item] of fresh) {
      const old = items.get(name)
      if (old === undefined) apply('ADDED', item)
      else if (versionOf(old) !== versionOf(item)) apply('MODIFIED', item)
    }
    version = (answer.metadata as Json).resourceVersion as string
    synced = true
  }

  async function run(): Promise<void> {
    let pause = BACKOFF_FIRST_MS
    let listed = false
    while (!signal.aborted) {
      try {
        if (!listed) await list()
        listed = true
        await kube.watch(
          path,
          { resourceVersion: version, allowWatchBookmarks: true },
          (event) => {
            if (!listed) return
            // 410 Gone, or any other refusal inside the watch: what was missed is read again.
            if (event.type === 'ERROR') listed = false
            else apply(event.type, event.object)
          },
          signal,
        )
        pause = BACKOFF_FIRST_MS
      } catch (error) {
        if (!(error instanceof Unavailable)) throw error
        synced = false
        listed = false
        await sleep(pause, undefined, { signal }).catch(() => undefined)
        pause = Math.min(pause * 2, BACKOFF_LAST_MS)
      }
    }
  }

  run().catch((error: Error) => {
    onStop()
    for (const set of subscribers.values()) for (const subscriber of set) subscriber.fail(error)
  })

  return {
    get synced() {
      return synced
    },
    get: (name) => items.get(name),
    subscribe(name, subscriber) {
      let set = subscribers.get(name)
      if (set === undefined) subscribers.set(name, (set = new Set()))
      set.add(subscriber)
      return () => {
        set.delete(subscriber)
        if (set.size === 0) subscribers.delete(name)
      }
    },
  }
}

export interface GatewayCache {
  /** The namespace's Challenges, its list + watch started on first use. */
  challenges(namespace: string): Informer
  /** Ends every watch (the app closes). */
  stop(): void
}

export function gatewayCache(kube: Kube): GatewayCache {
  const controller = new AbortController()
  const informers = new Map<string, Informer>()
  return {
    challenges(namespace) {
      const path = `${CHALLENGES_API}/namespaces/${namespace}/challenges`
      let found = informers.get(path)
      if (found === undefined) {
        found = informer(kube, path, controller.signal, () => informers.delete(path))
        informers.set(path, found)
      }
      return found
    },
    stop: () => controller.abort(),
  }
}
