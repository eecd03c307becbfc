// The shapes the Metacontroller stand-in works with: the CompositeController it runs (the fields it reads), the
// request its sync hook gets, what one sync did (SyncResult), and what its parts share while syncing.
import type { Awaitable, ClusterBackend } from './backend.js'
import type { HookResponse } from './hooks.js'
import type { KubeObject, ObjectRef, ResourceType } from './objects.js'
import type { HookVersion } from './related.js'
import type { RelatedRule, SyncAnswer } from './response.js'

export type UpdateMethod = 'OnDelete' | 'Recreate' | 'InPlace' | 'RollingRecreate' | 'RollingInPlace'

export interface Hook {
  version?: HookVersion
  webhook?: {
    url?: string
    etag?: { enabled?: boolean }
    responseUnMarshallMode?: 'loose' | 'strict'
    [field: string]: unknown
  }
}

/** The shape of a metacontroller.k8s.io/v1alpha1 CompositeController (fields the simulator reads). */
export interface CompositeController {
  apiVersion?: string
  kind?: string
  metadata: { name: string; [field: string]: unknown }
  spec: {
    parentResource: { apiVersion: string; resource: string; ignoreStatusChanges?: boolean; [field: string]: unknown }
    childResources?: Array<{ apiVersion: string; resource: string; updateStrategy?: { method?: UpdateMethod } }>
    hooks?: { sync?: Hook; finalize?: Hook; customize?: Hook }
    generateSelector?: boolean
    resyncPeriodSeconds?: number
    [field: string]: unknown
  }
}

export interface SimulatorOptions {
  /** overrides every hook's `version` (the controller sent to hooks shows it too) */
  hookVersion?: HookVersion
  /** overrides every hook's `webhook.etag.enabled` */
  etag?: boolean
}

export interface SyncRequest {
  controller: CompositeController
  parent: KubeObject
  children: Record<string, Record<string, KubeObject>>
  related: Record<string, Record<string, KubeObject>>
  finalizing: boolean
}

/** A Kubernetes Event Metacontroller would record on the parent. */
export interface SimEvent {
  time: string
  type: 'Warning'
  reason: 'SyncError'
  message: string
  parent: { namespace: string; name: string }
}

export interface SyncResult {
  parent: { namespace: string; name: string }
  /** synced; error (SyncError event, retried with backoff); retryAfter (429); notFound (parent gone, nothing done) */
  outcome: 'synced' | 'error' | 'retryAfter' | 'notFound'
  hook?: 'sync' | 'finalize'
  /** exactly what was sent to the sync/finalize hook */
  request?: SyncRequest
  requestHeaders?: Record<string, string>
  response?: HookResponse
  /** the decoded answer (the cached one after a 304) */
  answer?: SyncAnswer
  customize?: { cached: boolean; request?: unknown; response?: HookResponse; rules?: RelatedRule[] }
  created: ObjectRef[]
  updated: ObjectRef[]
  deleted: ObjectRef[]
  adopted: ObjectRef[]
  released: ObjectRef[]
  statusWritten: boolean
  finalizerAdded: boolean
  finalizerRemoved: boolean
  /** a resync requested by the answer (resyncAfterSeconds > 0) */
  resyncAfterSeconds?: number
  /** the delay a 429 asked for */
  retryAfterSeconds?: number
  /** API requests Metacontroller would have sent (a request the API server finds to be a no-op still counts) */
  writes: number
  errors: string[]
  /** simulator diagnostics: things Metacontroller does silently that a hook author wants to know */
  warnings: string[]
  events: SimEvent[]
}

/** A child rule of the controller, resolved to its resource type. */
export interface ChildRule {
  resource: ResourceType
  method: UpdateMethod
}

/** The field manager of every write Metacontroller makes. */
export const MANAGER = 'metacontroller'

/** What the parts of a sync (children.ts, parent-writes.ts) share with the controller. */
export interface SyncContext {
  readonly cluster: ClusterBackend
  /** Sends one API request, counted in the controller's and in this sync's totals (SyncResult.writes). */
  write<T>(result: SyncResult, request: () => Awaitable<T>): Promise<T>
}
