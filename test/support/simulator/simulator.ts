// A stand-in for Metacontroller's CompositeController (v4.17): one parent kind, its child rules, its hooks.
// It follows pkg/controller/composite (sync, syncParentObject, claimChildren, updateParentStatus),
// pkg/controller/common (ManageChildren with dynamic apply) and pkg/hooks (status codes, 429, ETag, strict mode),
// against a ClusterBackend (the in-memory Cluster on a virtual clock, or a real API server) and a HookTransport,
// one sync at a time. Tests drive it step by step (runUntilQuiet, advance); against a real API server, whose
// events arrive on their own, serve() runs it as a controller until stopped.
import type { WatchEvent } from './cluster.js'
import { ApiError } from './admission.js'
import type { Awaitable, ClusterBackend } from './backend.js'
import type { HookName, HookResponse, HookTransport } from './hooks.js'
import { deepCopy, deepEqual, isObject, sortKeys, type JsonObject } from './json.js'
import { applyUpdate, setLastApplied } from './merge.js'
import {
  controllerOf,
  controllerRefTo,
  describe,
  groupName,
  labelMatcher,
  refOf,
  resourceByKind,
  resourceByName,
  type KubeObject,
  type LabelMatcher,
  type LabelSelector,
  type ObjectRef,
  type OwnerReference,
  type ResourceType,
} from './objects.js'
import { WorkQueue } from './queue.js'
import { listRelated, resolveRule, type HookVersion } from './related.js'
import { CrashError, decodeCustomizeAnswer, decodeSyncAnswer, type RelatedRule, type SyncAnswer } from './response.js'

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

interface ChildRule {
  resource: ResourceType
  method: UpdateMethod
}

interface CustomizeEntry {
  rules: RelatedRule[]
  expiresAtMs: number
}

const CUSTOMIZE_CACHE_MS = 20 * 60 * 1000
/** client-go's retry.DefaultBackoff: Metacontroller's AtomicUpdate tries a conflicting write this often. */
const CONFLICT_ATTEMPTS = 4
const GC_FINALIZERS = ['foregroundDeletion', 'orphan']
const BENIGN_CHILD_ERRORS = new Set(['NotFound', 'AlreadyExists', 'Conflict'])
const MANAGER = 'metacontroller'

class RetryAfter extends Error {
  constructor(readonly seconds: number) {
    super(`too many requests: retry after ${seconds}s`)
  }
}

export class Simulator {
  readonly events: SimEvent[] = []
  readonly history: SyncResult[] = []
  /** total API requests sent (see SyncResult.writes) */
  writes = 0

  readonly #cluster: ClusterBackend
  readonly #transport: HookTransport
  readonly #options: SimulatorOptions
  readonly #controller: CompositeController
  readonly #parent: ResourceType
  readonly #children: ChildRule[]
  readonly #finalizer: string
  readonly #queue = new WorkQueue()
  readonly #customizeCache = new Map<string, CustomizeEntry>()
  readonly #etags = new Map<string, { etag: string; body: unknown }>()
  readonly #unwatch: () => void
  /** resyncPeriodSeconds: when every parent is next re-queued */
  readonly #periodic: { everyMs: number; nextMs: number } | undefined
  /** serve(): wakes the loop when a watch event queues a parent */
  #wake: (() => void) | undefined

  constructor(controller: CompositeController, cluster: ClusterBackend, transport: HookTransport, options: SimulatorOptions = {}) {
    this.#cluster = cluster
    this.#transport = transport
    this.#options = options
    this.#controller = withVersionOverride(deepCopy(controller), options.hookVersion)
    const { spec } = this.#controller
    this.#parent = resource(spec.parentResource.apiVersion, spec.parentResource.resource)
    this.#children = (spec.childResources ?? []).map((rule) => ({
      resource: resource(rule.apiVersion, rule.resource),
      method: rule.updateStrategy?.method ?? 'OnDelete',
    }))
    this.#finalizer = `metacontroller.io/compositecontroller-${controller.metadata.name}`
    if (spec.resyncPeriodSeconds !== undefined) {
      // Metacontroller puts a floor of one second under the period.
      const everyMs = Math.max(spec.resyncPeriodSeconds, 1) * 1000
      this.#periodic = { everyMs, nextMs: this.#nowMs() + everyMs }
    }
    this.#unwatch = cluster.watch((event) => this.#onEvent(event))
    // The informer's initial list: every existing parent is synced once.
    for (const parent of this.#parents()) this.#queue.add(keyOf(parent))
  }

  /** Stops watching the cluster. */
  close(): void {
    this.#unwatch()
  }

  /** Parents queued to sync now (`namespace/name`). */
  pending(): string[] {
    this.#queue.promote(this.#nowMs())
    return this.#queue.ready()
  }

  /** When a delayed sync (resyncAfterSeconds, 429, error backoff) of this parent is due, if one is pending. */
  scheduledAt(namespace: string, name: string): Date | undefined {
    const due = this.#queue.dueAt(`${namespace}/${name}`)
    return due === undefined ? undefined : new Date(due)
  }

  enqueue(namespace: string, name: string): void {
    this.#queue.add(`${namespace}/${name}`)
  }

  /** Processes every queued sync, and the ones they cause, at the current time. Returns the writes made. */
  async runUntilQuiet(options: { maxSteps?: number } = {}): Promise<number> {
    const maxSteps = options.maxSteps ?? 100
    const before = this.writes
    for (let steps = 0; ; steps++) {
      this.#queue.promote(this.#nowMs())
      const key = this.#queue.take()
      if (key === undefined) return this.writes - before
      if (steps === maxSteps) {
        this.#queue.add(key)
        const recent = this.history.slice(-5).map((r) => `${r.parent.namespace}/${r.parent.name}: ${r.outcome} (${r.writes} writes)`)
        throw new Error(`not quiet after ${maxSteps} syncs; still queued: ${this.#queue.ready().join(', ')}; last: ${recent.join('; ')}`)
      }
      await this.#reconcileKey(key)
    }
  }

  /** Moves the clock forward, running every sync that falls due on the way (in time order). Returns the writes made. */
  async advance(seconds: number, options: { maxSteps?: number } = {}): Promise<number> {
    const before = this.writes
    const targetMs = this.#nowMs() + Math.round(seconds * 1000)
    await this.runUntilQuiet(options)
    for (;;) {
      const due = [this.#queue.nextDue(), this.#periodic?.nextMs].filter((t): t is number => t !== undefined && t <= targetMs)
      if (due.length === 0) break
      this.#moveClockTo(Math.min(...due))
      this.#queueDue()
      await this.runUntilQuiet(options)
    }
    this.#moveClockTo(targetMs)
    await this.runUntilQuiet(options)
    return this.writes - before
  }

  /**
   * Runs as a controller until `signal` aborts: every queued sync as it falls due on the backend's clock, waiting
   * for watch events in between. For a real API server, whose events arrive on their own.
   */
  async serve(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      this.#queueDue()
      const key = this.#queue.take()
      if (key !== undefined) {
        await this.#reconcileKey(key)
        continue
      }
      const due = [this.#queue.nextDue(), this.#periodic?.nextMs].filter((t): t is number => t !== undefined)
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer)
          signal.removeEventListener('abort', done)
          this.#wake = undefined
          resolve()
        }
        // Timers are capped so that a moved virtual clock is noticed within a second.
        const timer = setTimeout(done, Math.min(due.length === 0 ? 1000 : Math.min(...due) - this.#nowMs(), 1000))
        signal.addEventListener('abort', done)
        this.#wake = done
      })
    }
  }

  /** One sync of one parent, now, whatever the queue holds (a queued sync of it is taken off the queue). */
  async reconcile(namespace: string, name: string): Promise<SyncResult> {
    this.#queue.remove(`${namespace}/${name}`)
    return this.#reconcileKey(`${namespace}/${name}`)
  }

  // ---- one sync (composite controller: sync + syncParentObject) ----

  async #reconcileKey(key: string): Promise<SyncResult> {
    const [namespace = '', name = ''] = key.split('/')
    const result: SyncResult = {
      parent: { namespace, name },
      outcome: 'synced',
      created: [],
      updated: [],
      deleted: [],
      adopted: [],
      released: [],
      statusWritten: false,
      finalizerAdded: false,
      finalizerRemoved: false,
      writes: 0,
      errors: [],
      warnings: [],
      events: [],
    }
    try {
      await this.#sync(result)
      this.#queue.forget(key)
    } catch (error) {
      if (error instanceof RetryAfter) {
        // No event and no backoff: the hook asked for this delay.
        result.outcome = 'retryAfter'
        result.retryAfterSeconds = error.seconds
        if (error.seconds <= 0) result.warnings.push('429 without a positive Retry-After: Metacontroller retries immediately (a hot loop)')
        this.#queue.addAt(key, this.#nowMs() + error.seconds * 1000, this.#nowMs())
      } else {
        const message = messageOf(error)
        result.outcome = 'error'
        result.errors.push(message)
        const event: SimEvent = { time: this.#cluster.timestamp(), type: 'Warning', reason: 'SyncError', message: `Sync error: ${message}`, parent: result.parent }
        this.events.push(event)
        result.events.push(event)
        this.#queue.addRateLimited(key, this.#nowMs())
      }
    }
    this.history.push(result)
    return result
  }

  async #sync(result: SyncResult): Promise<void> {
    let parent = this.#cluster.get(this.#parentRef(result.parent.namespace, result.parent.name))
    if (!parent) {
      result.outcome = 'notFound'
      return
    }
    parent = await this.#syncFinalizer(parent, result)
    const finalizing = this.#hook('finalize') !== undefined && parent.metadata.deletionTimestamp !== undefined
    const hookName = finalizing ? 'finalize' : 'sync'
    result.hook = hookName
    const version = this.#version(hookName)

    const selector = this.#selector(parent)
    const observed = await this.#claimChildren(parent, selector, result)
    const related = await this.#relatedObjects(parent, version, result)
    const request: SyncRequest = {
      controller: deepCopy(this.#controller),
      parent: sortKeys(parent),
      children: sortKeys(groupObjects(observed.map(([rule, objects]) => [rule.resource, objects]), version)),
      related: sortKeys(related),
      finalizing,
    }
    result.request = request
    const answer = await this.#callSyncHook(hookName, version, parent, request, result)
    for (const child of answer.children ?? []) {
      child.metadata = isObject(child.metadata) ? child.metadata : ({} as KubeObject['metadata'])
      child.metadata.namespace ??= parent.metadata.namespace
    }

    if (answer.resyncAfterSeconds > 0) {
      result.resyncAfterSeconds = answer.resyncAfterSeconds
      this.#queue.addAt(keyOf(parent), this.#nowMs() + answer.resyncAfterSeconds * 1000, this.#nowMs())
    }
    if (answer.finalized) {
      if (!finalizing) result.warnings.push('finalized: true in a sync answer removes the finalizer, which is added back next sync (it flaps)')
      parent = await this.#removeFinalizer(parent, result)
    }

    const desired = this.#desiredChildren(parent, answer.children ?? [], selector)
    const manageErrors: string[] = []
    if (parent.metadata.deletionTimestamp === undefined || this.#shouldFinalize(parent)) {
      await this.#manageChildren(parent, observed.flatMap(([, objects]) => objects), desired, result, manageErrors)
    }
    await this.#updateStatus(parent, answer.status, result)
    if (manageErrors.length > 0) {
      throw new Error(`can't reconcile children for ${describe(refOf(parent))}: ${manageErrors.join('; ')}`)
    }
  }

  // ---- finalizer (pkg/controller/common/finalizer) ----

  async #syncFinalizer(parent: KubeObject, result: SyncResult): Promise<KubeObject> {
    const has = (parent.metadata.finalizers ?? []).includes(this.#finalizer)
    const enabled = this.#hook('finalize') !== undefined
    if (has === enabled) return parent
    if (!enabled) return this.#removeFinalizer(parent, result)
    // No new finalizer on an object that is already going away.
    if (parent.metadata.deletionTimestamp !== undefined) return parent
    const { object, written } = await this.#atomicUpdate(result, parent, 'main', (current) => {
      const finalizers = current.metadata.finalizers ?? []
      if (finalizers.includes(this.#finalizer)) return false
      current.metadata.finalizers = [...finalizers, this.#finalizer]
      return true
    })
    result.finalizerAdded = written
    return object
  }

  async #removeFinalizer(parent: KubeObject, result: SyncResult): Promise<KubeObject> {
    if (!(parent.metadata.finalizers ?? []).includes(this.#finalizer)) return parent
    // The last finalizer of a deleted object: the API server removes it and answers with its final state.
    const { object, written } = await this.#atomicUpdate(result, parent, 'main', (current) => {
      const finalizers = current.metadata.finalizers ?? []
      if (!finalizers.includes(this.#finalizer)) return false
      current.metadata.finalizers = finalizers.filter((f) => f !== this.#finalizer)
      return true
    })
    result.finalizerRemoved = written
    return object
  }

  /**
   * dynamic clientset AtomicUpdate / AtomicStatusUpdate: a live GET (not the cache), the change, the write; on a
   * conflict, all again. NotFound when the object was replaced by another of the same name.
   */
  async #atomicUpdate(
    result: SyncResult,
    orig: KubeObject,
    target: 'main' | 'status',
    change: (current: KubeObject) => boolean,
  ): Promise<{ object: KubeObject; written: boolean }> {
    const ref = refOf(orig)
    for (let attempt = 1; ; attempt++) {
      const current = await (this.#cluster.read?.(ref) ?? this.#cluster.get(ref))
      if (current === undefined || current.metadata.uid !== orig.metadata.uid) {
        throw new ApiError('NotFound', `${ref.kind} "${ref.name}" not found`)
      }
      if (!change(current)) return { object: current, written: false }
      try {
        const object = await this.#write(result, () =>
          target === 'status' ? this.#cluster.updateStatus(current, MANAGER) : this.#cluster.update(current, MANAGER),
        )
        return { object, written: true }
      } catch (error) {
        if (!(error instanceof ApiError && error.reason === 'Conflict') || attempt === CONFLICT_ATTEMPTS) throw error
      }
    }
  }

  #shouldFinalize(parent: KubeObject): boolean {
    // Only called for a parent being deleted, which has finalizers (or it would be gone).
    const finalizers = parent.metadata.finalizers as string[]
    return (
      this.#hook('finalize') !== undefined &&
      finalizers.includes(this.#finalizer) &&
      !finalizers.some((f) => GC_FINALIZERS.includes(f))
    )
  }

  // ---- children: selector, claim (adopt/release), desired set, apply ----

  #selector(parent: KubeObject): LabelMatcher {
    if (this.#controller.spec.generateSelector === true) {
      return labelMatcher({ matchLabels: { 'controller-uid': String(parent.metadata.uid) } })
    }
    const selector = ((parent.spec as { selector?: LabelSelector } | undefined)?.selector ?? {}) as LabelSelector
    if (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0) {
      throw new Error('.spec.selector must have either matchLabels, matchExpressions, or both')
    }
    return labelMatcher(selector)
  }

  async #claimChildren(parent: KubeObject, selector: LabelMatcher, result: SyncResult): Promise<Array<[ChildRule, KubeObject[]]>> {
    const claimed: Array<[ChildRule, KubeObject[]]> = []
    const parentDeleting = parent.metadata.deletionTimestamp !== undefined
    for (const rule of this.#children) {
      const children: KubeObject[] = []
      for (const obj of this.#cluster.list(rule.resource.apiVersion, rule.resource.kind, parent.metadata.namespace)) {
        const owner = controllerOf(obj)
        const matches = selector(obj.metadata.labels)
        if (owner !== undefined) {
          if (owner.uid !== parent.metadata.uid) continue
          if (matches) children.push(obj)
          else if (!parentDeleting) {
            // Owned but no longer selected: let go of it.
            obj.metadata.ownerReferences = (obj.metadata.ownerReferences as OwnerReference[]).filter((ref) => ref.uid !== parent.metadata.uid)
            await this.#write(result, () => this.#cluster.update(obj, MANAGER))
            result.released.push(refOf(obj))
          }
        } else if (matches && !parentDeleting && obj.metadata.deletionTimestamp === undefined) {
          // An orphan the parent's selector matches: adopt it.
          obj.metadata.ownerReferences = [...(obj.metadata.ownerReferences ?? []), controllerRefTo(parent)]
          children.push(await this.#write(result, () => this.#cluster.update(obj, MANAGER)))
          result.adopted.push(refOf(obj))
        }
      }
      claimed.push([rule, children])
    }
    return claimed
  }

  /** Namespace defaults and the selector invariant (generateSelector adds the controller-uid label). */
  #desiredChildren(parent: KubeObject, children: KubeObject[], selector: LabelMatcher): KubeObject[] {
    const desired = new Map<string, KubeObject>()
    for (const child of children) {
      const labels = child.metadata.labels ?? {}
      if (this.#controller.spec.generateSelector === true && labels['controller-uid'] === undefined) {
        child.metadata.labels = { ...labels, 'controller-uid': String(parent.metadata.uid) }
      }
      if (!selector(child.metadata.labels)) {
        throw new Error(`labels on desired child ${String(child.kind)} ${String(child.metadata.namespace)}/${String(child.metadata.name)} don't match parent selector`)
      }
      // Keyed like Metacontroller's object map: a later duplicate replaces an earlier one.
      desired.set(`${child.apiVersion}|${child.kind}|${child.metadata.namespace}/${child.metadata.name}`, child)
    }
    return [...desired.values()]
  }

  /** common.ManageChildren: delete what is no longer desired, then create or update per update strategy. */
  async #manageChildren(parent: KubeObject, observed: KubeObject[], desired: KubeObject[], result: SyncResult, errors: string[]): Promise<void> {
    const sameObject = (a: KubeObject, b: KubeObject) =>
      a.apiVersion === b.apiVersion && a.kind === b.kind && a.metadata.namespace === b.metadata.namespace && a.metadata.name === b.metadata.name
    for (const child of observed) {
      if (child.metadata.deletionTimestamp !== undefined || desired.some((d) => sameObject(d, child))) continue
      await this.#tryWrite(result, errors, refOf(child), () => this.#cluster.delete(refOf(child), { uid: child.metadata.uid }), result.deleted)
    }
    for (const child of desired) {
      const ref = refOf(child)
      const rule = this.#children.find((r) => r.resource.apiVersion === child.apiVersion && r.resource.kind === child.kind)
      if (!resourceByKind(child.apiVersion, child.kind)) {
        errors.push(`can't find resource for ${String(child.apiVersion)}/${child.kind}`)
        continue
      }
      if (rule === undefined) {
        result.warnings.push(`${describe(ref)} is not a child type of this controller: created once, never updated or deleted`)
      }
      if (child.metadata.namespace !== parent.metadata.namespace) {
        result.warnings.push(`${describe(ref)} is outside the parent's namespace: never observed, and garbage-collected`)
      }
      const current = observed.find((o) => sameObject(o, child))
      if (current === undefined) {
        setLastApplied(child, child)
        child.metadata.ownerReferences = [...(child.metadata.ownerReferences ?? [])]
        if (!child.metadata.ownerReferences.some((o) => o.uid === parent.metadata.uid)) child.metadata.ownerReferences.push(controllerRefTo(parent))
        await this.#tryWrite(result, errors, ref, () => this.#cluster.create(child, MANAGER), result.created)
        continue
      }
      // Observed children are of this controller's child types, so the rule exists.
      await this.#updateChild(current, child, (rule as ChildRule).method, result, errors)
    }
  }

  async #updateChild(observed: KubeObject, desired: KubeObject, method: UpdateMethod, result: SyncResult, errors: string[]): Promise<void> {
    const ref = refOf(observed)
    let merged: KubeObject
    try {
      merged = applyUpdate(observed, desired)
    } catch (error) {
      errors.push(`${describe(ref)}: ${(error as Error).message}`)
      return
    }
    if (deepEqual(merged, observed) || observed.metadata.deletionTimestamp !== undefined) return
    switch (method) {
      case 'OnDelete':
        return
      case 'Recreate':
      case 'RollingRecreate':
        // Deleted now, created by a later sync once it is gone.
        await this.#tryWrite(result, errors, ref, () => this.#cluster.delete(ref, { uid: observed.metadata.uid }), result.deleted)
        return
      case 'InPlace':
      case 'RollingInPlace':
        await this.#tryWrite(result, errors, ref, () => this.#cluster.update(merged, MANAGER), result.updated)
        return
      default:
        errors.push(`invalid update strategy for ${observed.kind}: unknown method "${String(method)}"`)
    }
  }

  // ---- status (updateParentStatus) ----

  async #updateStatus(parent: KubeObject, status: JsonObject | null, result: SyncResult): Promise<void> {
    const next = { ...(status ?? {}), observedGeneration: parent.metadata.generation }
    try {
      const { written } = await this.#atomicUpdate(result, parent, 'status', (current) => {
        if (deepEqual(current.status, next)) return false
        current.status = next
        return true
      })
      result.statusWritten = written
    } catch (error) {
      // Gone (its last finalizer was just removed), or changed again since: the next sync writes it.
      if (error instanceof ApiError && (error.reason === 'NotFound' || error.reason === 'Conflict')) return
      throw error
    }
  }

  // ---- hooks ----

  /** Related objects, keyed for the sync/finalize hook's `version` (the rules follow the customize hook's). */
  async #relatedObjects(parent: KubeObject, version: HookVersion, result: SyncResult): Promise<Record<string, Record<string, KubeObject>>> {
    if (this.#hook('customize') === undefined) return {}
    const rules = await this.#customizeRules(parent, result)
    const groups: Array<[ResourceType, KubeObject[]]> = []
    for (const rule of rules) {
      const resolved = resolveRule(rule, parent, this.#version('customize'))
      groups.push([resolved.resource, listRelated(this.#cluster, resolved)])
    }
    return groupObjects(groups, version)
  }

  async #customizeRules(parent: KubeObject, result: SyncResult): Promise<RelatedRule[]> {
    const cacheKey = `${parent.metadata.uid}/${parent.metadata.generation}`
    const cached = this.#customizeCache.get(cacheKey)
    if (cached !== undefined && cached.expiresAtMs > this.#nowMs()) {
      result.customize = { cached: true, rules: cached.rules }
      return cached.rules
    }
    const request = { controller: deepCopy(this.#controller), parent: sortKeys(parent) }
    result.customize = { cached: false, request }
    const version = this.#version('customize')
    const { response, body } = await this.#call('customize', request, parent)
    result.customize.response = response
    const decoded = decodeWith(() => decodeCustomizeAnswer(body, this.#strict('customize')), 'customize', version)
    this.#noteIgnoredFields(decoded.ignoredFields, 'customize', result)
    result.customize.rules = decoded.answer
    this.#customizeCache.set(cacheKey, { rules: decoded.answer, expiresAtMs: this.#nowMs() + CUSTOMIZE_CACHE_MS })
    return decoded.answer
  }

  async #callSyncHook(
    hookName: 'sync' | 'finalize',
    version: HookVersion,
    parent: KubeObject,
    request: SyncRequest,
    result: SyncResult,
  ): Promise<SyncAnswer> {
    if (this.#hook(hookName) === undefined) {
      throw new Error(`sync hook nil//not defined for ${describe(refOf(parent))} (a hook needs a webhook)`)
    }
    const { response, headers, body } = await this.#call(hookName, request, parent)
    result.requestHeaders = headers
    result.response = response
    const decoded = decodeWith(() => decodeSyncAnswer(body, this.#strict(hookName)), hookName, version)
    this.#noteIgnoredFields(decoded.ignoredFields, hookName, result)
    result.answer = decoded.answer
    return decoded.answer
  }

  /** pkg/hooks webhookExecutor.Call: status handling, 429, ETag. Returns the body to decode. */
  async #call(hook: HookName, request: object, parent: KubeObject): Promise<{ response: HookResponse; headers: Record<string, string>; body: unknown }> {
    const etagKey = `${hook}|${parent.kind}|${parent.metadata.namespace}/${parent.metadata.name}`
    const cached = this.#etagEnabled(hook) ? this.#etags.get(etagKey) : undefined
    const headers: Record<string, string> = cached ? { 'If-None-Match': cached.etag } : {}
    let response: HookResponse
    try {
      // A copy: whatever the hook does to its request cannot reach the cluster or the recorded request.
      response = await this.#transport.call(hook, deepCopy(request), headers)
    } catch (error) {
      throw new Error(`${hook} hook failed: http error: ${messageOf(error)}`)
    }
    if (response.statusCode === 429) throw new RetryAfter(retryAfterSeconds(header(response, 'retry-after'), this.#cluster.now()))
    const text = String(response.text ?? JSON.stringify(response.body))
    if (cached && (response.statusCode === 304 || response.statusCode === 412)) {
      return { response, headers, body: deepCopy(cached.body) }
    }
    if (response.statusCode !== 200) {
      throw new Error(`${hook} hook failed: unsupported status code: ${response.statusCode} body: ${text}`)
    }
    if (response.body === undefined) {
      throw new Error(`${hook} hook failed: can't unmarshal webhookResponse: not JSON: ${JSON.stringify(text.slice(0, 200))}`)
    }
    const etag = header(response, 'etag')
    if (this.#etagEnabled(hook) && etag !== undefined) this.#etags.set(etagKey, { etag, body: deepCopy(response.body) })
    return { response, headers, body: deepCopy(response.body) }
  }

  #noteIgnoredFields(fields: string[], hook: HookName, result: SyncResult): void {
    for (const field of fields) result.warnings.push(`${hook} answer: unknown field "${field}" ignored (loose mode)`)
  }

  #hook(name: HookName): Hook | undefined {
    const hook = this.#controller.spec.hooks?.[name]
    // Metacontroller only enables a hook that has a webhook.
    return hook?.webhook === undefined ? undefined : hook
  }

  #version(name: HookName): HookVersion {
    return this.#controller.spec.hooks?.[name]?.version ?? 'v1'
  }

  #strict(name: HookName): boolean {
    const mode = this.#hook(name)?.webhook?.responseUnMarshallMode
    return (mode ?? (this.#version(name) === 'v2' ? 'strict' : 'loose')) === 'strict'
  }

  #etagEnabled(name: HookName): boolean {
    return this.#options.etag ?? this.#hook(name)?.webhook?.etag?.enabled ?? false
  }

  // ---- watch: which parents a change concerns ----

  #onEvent(event: WatchEvent): void {
    const queued = this.#queue.ready().length
    this.#route(event)
    if (this.#queue.ready().length > queued) this.#wake?.()
  }

  #route(event: WatchEvent): void {
    const obj = event.object
    if (obj.apiVersion === this.#parent.apiVersion && obj.kind === this.#parent.kind) {
      if (!this.#ignoredParentChange(event)) this.#queue.add(keyOf(obj))
    }
    if (this.#children.some((rule) => rule.resource.apiVersion === obj.apiVersion && rule.resource.kind === obj.kind)) {
      this.#onChildEvent(event)
    }
    this.#onRelatedEvent(event)
  }

  /** parentResource.ignoreStatusChanges: only generation, labels, annotations and deletion count. */
  #ignoredParentChange({ type, object, previous }: WatchEvent): boolean {
    return (
      this.#controller.spec.parentResource.ignoreStatusChanges === true &&
      type === 'MODIFIED' &&
      previous !== undefined &&
      previous.metadata.generation === object.metadata.generation &&
      deepEqual(previous.metadata.labels, object.metadata.labels) &&
      deepEqual(previous.metadata.annotations, object.metadata.annotations) &&
      object.metadata.deletionTimestamp === undefined
    )
  }

  #onChildEvent({ type, object }: WatchEvent): void {
    const owner = controllerOf(object)
    if (owner !== undefined) {
      const parent = this.#cluster.get(this.#parentRef(String(object.metadata.namespace), owner.name))
      if (owner.kind === this.#parent.kind && parent?.metadata.uid === owner.uid) this.#queue.add(keyOf(parent))
      return
    }
    // An orphan: every parent whose selector matches may want to adopt it (never one being deleted).
    if (type === 'DELETED' || object.metadata.deletionTimestamp !== undefined) return
    for (const parent of this.#parents(object.metadata.namespace)) {
      try {
        if (this.#selector(parent)(object.metadata.labels)) this.#queue.add(keyOf(parent))
      } catch {
        // a parent without a usable selector adopts nothing
      }
    }
  }

  /** Parents whose cached customize rules select the object (before or after the change). */
  #onRelatedEvent({ object, previous }: WatchEvent): void {
    for (const parent of this.#parents()) {
      const cached = this.#customizeCache.get(`${parent.metadata.uid}/${parent.metadata.generation}`)
      if (cached === undefined) continue
      const selects = cached.rules.some((rule) => {
        try {
          const { matches } = resolveRule(rule, parent, this.#version('customize'))
          return matches(object) || (previous !== undefined && matches(previous))
        } catch {
          return false
        }
      })
      if (selects) this.#queue.add(keyOf(parent))
    }
  }

  // ---- helpers ----

  async #write<T>(result: SyncResult, write: () => Awaitable<T>): Promise<T> {
    this.writes += 1
    result.writes += 1
    return write()
  }

  /**
   * A child write; API errors are collected (the sync still writes status). As in Metacontroller's ManageChildren,
   * a child already gone (NotFound), already there (AlreadyExists) or changed since it was read (Conflict) is no
   * error: the next sync sees the new state. Anything else (Invalid, Forbidden, ...) is.
   */
  async #tryWrite(result: SyncResult, errors: string[], ref: ObjectRef, write: () => unknown, done: ObjectRef[]): Promise<void> {
    try {
      await this.#write(result, write)
      done.push(ref)
    } catch (error) {
      if (error instanceof ApiError && BENIGN_CHILD_ERRORS.has(error.reason)) return
      errors.push(`${describe(ref)}: ${(error as Error).message}`)
    }
  }

  #parents(namespace?: string): KubeObject[] {
    return this.#cluster.list(this.#parent.apiVersion, this.#parent.kind, namespace)
  }

  #parentRef(namespace: string, name: string): ObjectRef {
    return { apiVersion: this.#parent.apiVersion, kind: this.#parent.kind, namespace, name }
  }

  #nowMs(): number {
    return this.#cluster.now().getTime()
  }

  /** Delayed syncs whose time has come, and the parent informer's periodic resync (resyncPeriodSeconds). */
  #queueDue(): void {
    this.#queue.promote(this.#nowMs())
    if (this.#periodic !== undefined && this.#periodic.nextMs <= this.#nowMs()) {
      for (const parent of this.#parents()) this.#queue.add(keyOf(parent))
      this.#periodic.nextMs += this.#periodic.everyMs
    }
  }

  #moveClockTo(ms: number): void {
    this.#cluster.advance(Math.max(ms - this.#nowMs(), 0) / 1000)
  }
}

// ---- module helpers ----

function resource(apiVersion: string, name: string): ResourceType {
  const found = resourceByName(apiVersion, name)
  if (!found) throw new Error(`can't find resource "${name}" in apiVersion "${apiVersion}"`)
  return found
}

function withVersionOverride(controller: CompositeController, version: HookVersion | undefined): CompositeController {
  for (const hook of Object.values(controller.spec.hooks ?? {})) if (version !== undefined) hook.version = version
  return controller
}

function keyOf(obj: KubeObject): string {
  return `${obj.metadata.namespace}/${obj.metadata.name}`
}

/** `{"<Kind>.<apiVersion>": {key: object}}`: a group per rule even when empty; keys `name` (v1) or `namespace/name` (v2). */
function groupObjects(groups: Array<[ResourceType, KubeObject[]]>, version: HookVersion): Record<string, Record<string, KubeObject>> {
  const result: Record<string, Record<string, KubeObject>> = {}
  for (const [resource, objects] of groups) {
    const group = (result[groupName(resource.apiVersion, resource.kind)] ??= {})
    for (const obj of objects) group[version === 'v1' ? obj.metadata.name : keyOf(obj)] = obj
  }
  return result
}

function decodeWith<T>(decode: () => T, hook: HookName, version: HookVersion): T {
  try {
    return decode()
  } catch (error) {
    if (error instanceof CrashError) throw new Error(`${hook} hook answer would crash Metacontroller: ${error.message}`)
    throw new Error(`${hook} hook failed (version=${version}): ${(error as Error).message}`)
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function header(response: HookResponse, name: string): string | undefined {
  return Object.entries(response.headers).find(([key]) => key.toLowerCase() === name)?.[1]
}

/** Go: an RFC 1123 date, else an integer (Atoi), else 0 (an immediate retry). */
function retryAfterSeconds(value: string | undefined, now: Date): number {
  if (value !== undefined && /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [A-Z]{3}$/.test(value)) {
    return Math.ceil((Date.parse(value) - now.getTime()) / 1000)
  }
  return value !== undefined && /^[+-]?\d+$/.test(value) ? Number.parseInt(value, 10) : 0
}
