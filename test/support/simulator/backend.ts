// What the Metacontroller stand-in needs from a cluster. Two implementations: the in-memory Cluster (cluster.ts,
// synchronous, virtual clock) and a real API server (test/support/kube/live-cluster.ts: informer caches, HTTP
// writes, the real clock plus an offset). Reads come from a cache, as Metacontroller's informers do; writes go to
// the API server and may be asynchronous.
import type { DeleteOptions, WatchListener } from './cluster.js'
import type { KubeObject, ObjectRef } from './objects.js'

export type Awaitable<T> = T | Promise<T>

export interface ClusterBackend {
  now(): Date
  /** now() as Kubernetes writes times (RFC 3339, whole seconds) */
  timestamp(): string
  /** Moves the clock forward (a real cluster's backend moves the virtual clock the hook server reads). */
  advance(seconds: number): void

  /** From the cache: may lag behind the API server. */
  get(ref: ObjectRef): KubeObject | undefined
  /** From the cache, sorted by namespace and name; all namespaces when `namespace` is omitted. */
  list(apiVersion: string, kind: string, namespace?: string): KubeObject[]
  /** A live GET past the cache (Metacontroller's AtomicUpdate); the cache's copy when there is no API server. */
  read?(ref: ObjectRef): Promise<KubeObject | undefined>

  create(obj: KubeObject, manager?: string): Awaitable<KubeObject>
  /** Replaces everything but system metadata (and status, for kinds with a status subresource). */
  update(obj: KubeObject, manager?: string): Awaitable<KubeObject>
  /** Writes only `.status` (the status subresource). */
  updateStatus(obj: KubeObject, manager?: string): Awaitable<KubeObject>
  /** Returns the object if it is still there (finalizers, a Pod's grace period). */
  delete(ref: ObjectRef, options?: DeleteOptions): Awaitable<KubeObject | undefined>

  watch(listener: WatchListener): () => void
}
