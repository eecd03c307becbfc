/**
 * The gateway's shared view of the API server: one list + watch of a resource per namespace (the informer every
 * controller runs), started on the namespace's first use and kept for the process's life: the namespace's Challenges
 * and its ChallengeDefinitions. The events streams subscribe here by name instead of each opening a watch of its own
 * (a watch is a connection to the API server and its buffers, about two thirds of what a stream cost), and the reads
 * of ./instances.ts answer from here once a list succeeded instead of making two or three calls each (a get queued
 * behind the API server: bench/RESULTS.md, the gateway).
 *
 * The watch carries on from the last resourceVersion when the API server ends it; an ERROR event (410 Gone: that
 * version is too old) lists again and tells subscribers what changed meanwhile; while the API server cannot be
 * reached it tries again after a growing pause and counts as not synced until a list succeeds, and reads go to the
 * API server meanwhile. A refusal that will not pass (403) or a failure of the code is handed to the subscribers and
 * to `onFailure`; for `retryFailedMs` after it, reads go to the API server and a new subscriber is told at once; the
 * next use after that starts afresh.
 *
 * Read your own writes: what the gateway itself wrote (created, patched, deleted) is kept here as the API server
 * answered it, before the watch tells of it, so that the caller's next read shows it. The watch may then deliver
 * events older than that write (they were on the wire already): an object is replaced only by a newer one. etcd's
 * resourceVersions are its revisions, integers that grow with every write, so they are compared as numbers. The API
 * reference calls them opaque, though: when either of two is not an integer the newer arrival is kept, and reads of
 * that object go to the API server (its order against the write cannot be known) until an integer version replaces
 * it. A delete is kept as the version it was made at, so that an older event does not bring the object back; the
 * watch's DELETED event (or a list made after it) ends that.
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
  /** True once a list succeeded, until the API server next cannot be reached or the watch fails for good. */
  readonly synced: boolean
  /** The object `name` as held (`object` undefined: there is none); undefined: ask the API server. */
  read(name: string): { object: Json | undefined } | undefined
  /** The objects held that pass `test`; undefined: ask the API server. */
  select(test: (object: Json) => boolean): Json[] | undefined
  /** An object as the API server answered the gateway's own create or patch. */
  wrote(object: Json): void
  /** An object as the API server answered the gateway's delete of it. */
  deleted(object: Json): void
  /** Changes of the object `name`, as the watch tells them; returns the unsubscribe. */
  subscribe(name: string, subscriber: Subscriber): () => void
}

/** The first pause after a failed call, doubled at each failure up to the last. */
const BACKOFF_FIRST_MS = 100
const BACKOFF_LAST_MS = 5000
/** How long a watch that failed for good is left failed before the next use starts it again. */
export const RETRY_FAILED_MS = 30_000

const INTEGER = /^\d+$/
// Every object the API server answers has one; a BOOKMARK's object has nothing else.
const versionOf = (object: Json) => (object.metadata as Json).resourceVersion as string
const nameOf = (object: Json) => (object.metadata as Json).name as string

/** How resourceVersion `a` orders against `b` (-1, 0, 1), when both are integers (etcd's revisions); else undefined. */
export function compareVersions(a: string, b: string): number | undefined {
  if (!INTEGER.test(a) || !INTEGER.test(b)) return undefined
  const [x, y] = [BigInt(a), BigInt(b)]
  return x < y ? -1 : x > y ? 1 : 0
}

/** Whether `version` may replace what is held at `held`: not when it is older; the newer arrival when not comparable. */
const notOlder = (version: string, held: string | undefined) =>
  held === undefined || (compareVersions(version, held) ?? 0) >= 0

function informer(kube: Kube, path: string, signal: AbortSignal, onFailure: (error: Error) => void): Informer {
  const items = new Map<string, Json>()
  /** Names the gateway deleted, with the version of the delete, until the watch or a later list tells of it. */
  const gone = new Map<string, string>()
  /** Names whose object's version is not an integer: reads of it ask the API server. */
  const unordered = new Set<string>()
  const subscribers = new Map<string, Set<Subscriber>>()
  let version = ''
  let synced = false
  let failure: Error | undefined

  const notify = (type: ChangeType, object: Json) => {
    for (const subscriber of subscribers.get(nameOf(object)) ?? []) subscriber.change(type, object)
  }

  /** What is held of `name`: its object's version, or its delete's. */
  const heldVersion = (name: string) => {
    const held = items.get(name)
    return held === undefined ? gone.get(name) : versionOf(held)
  }
  /** Keeps `object` unless what is held of its name is newer; true if kept. */
  const keep = (object: Json): boolean => {
    const name = nameOf(object)
    if (!notOlder(versionOf(object), heldVersion(name))) return false
    gone.delete(name)
    items.set(name, object)
    if (INTEGER.test(versionOf(object))) unordered.delete(name)
    else unordered.add(name)
    return true
  }
  /** Drops `object` unless what is held of its name is newer; `tombstone`: remembered as deleted at its version. */
  const drop = (object: Json, tombstone: boolean) => {
    const name = nameOf(object)
    if (!notOlder(versionOf(object), heldVersion(name))) return
    items.delete(name)
    unordered.delete(name)
    if (tombstone) gone.set(name, versionOf(object))
    else gone.delete(name)
  }

  /** A change the watch (or a list) tells of: kept if not older than what the gateway wrote, told to subscribers. */
  const apply = (type: string, object: Json) => {
    version = versionOf(object)
    if (type === 'BOOKMARK') return
    if (type === 'DELETED') drop(object, false)
    else keep(object)
    // Told as the watch says it, older or not: a stream orders what it is told itself (./events.ts).
    notify(type as ChangeType, object)
  }

  /** A fresh list, and to the subscribers what differs from what they were told. */
  async function list(): Promise<void> {
    const answer = await kube.call('GET', path)
    const listed = (answer.metadata as Json).resourceVersion as string
    const fresh = new Map((answer.items as Json[]).map((item) => [nameOf(item), item]))
    // What the list lacks was deleted meanwhile, unless the gateway wrote it after the list was made.
    for (const [name, old] of items) if (!fresh.has(name) && notOlder(listed, versionOf(old))) apply('DELETED', old)
    for (const [name, item] of fresh) {
      const old = items.get(name)
      if (old === undefined) apply('ADDED', item)
      else if (versionOf(old) !== versionOf(item)) apply('MODIFIED', item)
    }
    for (const [name, deletedAt] of gone) if (notOlder(listed, deletedAt)) gone.delete(name)
    version = listed
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
    synced = false
    failure = error
    onFailure(error)
    for (const set of subscribers.values()) for (const subscriber of set) subscriber.fail(error)
    subscribers.clear()
  })

  return {
    get synced() {
      return synced
    },
    read: (name) => (synced && !unordered.has(name) ? { object: items.get(name) } : undefined),
    select(test) {
      if (!synced) return undefined
      const chosen = [...items.values()].filter(test)
      return chosen.some((object) => unordered.has(nameOf(object))) ? undefined : chosen
    },
    wrote: (object) => void keep(object),
    deleted(object) {
      // Finalizers hold it (its deletionTimestamp set): it is still there, as the answer shows it.
      if (((object.metadata as Json).finalizers as unknown[] | undefined)?.length) keep(object)
      else drop(object, true)
    },
    subscribe(name, subscriber) {
      if (failure !== undefined) {
        subscriber.fail(failure)
        return () => undefined
      }
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

export interface CacheOptions {
  /** How long a watch that failed for good stays failed (RETRY_FAILED_MS by default). */
  retryFailedMs?: number
  /** Told when a watch fails for good (its reads go to the API server meanwhile). */
  onFailure?: (path: string, error: Error) => void
}

export interface GatewayCache {
  /** The namespace's Challenges, their list + watch started on first use. */
  challenges(namespace: string): Informer
  /** The namespace's ChallengeDefinitions, likewise. */
  definitions(namespace: string): Informer
  /** Ends every watch (the app closes). */
  stop(): void
}

export function gatewayCache(kube: Kube, options: CacheOptions = {}): GatewayCache {
  const retryFailedMs = options.retryFailedMs ?? RETRY_FAILED_MS
  const controller = new AbortController()
  const informers = new Map<string, { informer: Informer; failedAt?: number }>()
  const of = (path: string): Informer => {
    const found = informers.get(path)
    if (found !== undefined && (found.failedAt === undefined || performance.now() - found.failedAt < retryFailedMs))
      return found.informer
    const entry: { informer?: Informer; failedAt?: number } = {}
    entry.informer = informer(kube, path, controller.signal, (error) => {
      entry.failedAt = performance.now()
      options.onFailure?.(path, error)
    })
    informers.set(path, entry as { informer: Informer })
    return entry.informer
  }
  return {
    challenges: (namespace) => of(`${CHALLENGES_API}/namespaces/${namespace}/challenges`),
    definitions: (namespace) => of(`${CHALLENGES_API}/namespaces/${namespace}/challengedefinitions`),
    stop: () => controller.abort(),
  }
}
