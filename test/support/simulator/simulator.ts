// A stand-in for Metacontroller's CompositeController (v4.17): one parent kind, its child rules, its hooks.
// It follows pkg/controller/composite (sync, syncParentObject, claimChildren, updateParentStatus),
// pkg/controller/common (ManageChildren with dynamic apply) and pkg/hooks (status codes, 429, ETag, strict mode),
// in files of those parts: this one is the controller (its queue, one sync, the related objects of the customize
// hook, the watch that queues parents); children.ts claims and manages the children; parent-writes.ts writes the
// parent's finalizer and status; webhook.ts calls the hooks; controller.ts holds the shapes they share. It runs
// against a ClusterBackend (the in-memory Cluster on a virtual clock, or a real API server) and a HookTransport,
// one sync at a time. Tests drive it step by step (runUntilQuiet, advance); against a real API server, whose
// events arrive on their own, serve() runs it as a controller until stopped.
import type { WatchEvent } from './cluster.js'
import type { Awaitable, ClusterBackend } from './backend.js'
import { Children } from './children.js'
import type {
  ChildRule,
  CompositeController,
  SimEvent,
  SimulatorOptions,
  SyncRequest,
  SyncResult,
} from './controller.js'
import type { HookTransport } from './hooks.js'
import { deepCopy, deepEqual, isObject, sortKeys } from './json.js'
import {
  controllerOf,
  describe,
  groupObjects,
  keyOf,
  refOf,
  resourceByName,
  type KubeObject,
  type ObjectRef,
  type ResourceType,
} from './objects.js'
import { ParentWrites } from './parent-writes.js'
import { WorkQueue } from './queue.js'
import { listRelated, resolveRule, type HookVersion } from './related.js'
import type { RelatedRule } from './response.js'
import { messageOf, RetryAfter, Webhooks } from './webhook.js'

interface CustomizeEntry {
  rules: RelatedRule[]
  expiresAtMs: number
}

const CUSTOMIZE_CACHE_MS = 20 * 60 * 1000

export class Simulator {
  readonly events: SimEvent[] = []
  readonly history: SyncResult[] = []
  /** total API requests sent (see SyncResult.writes) */
  writes = 0

  readonly #cluster: ClusterBackend
  readonly #controller: CompositeController
  readonly #parent: ResourceType
  readonly #webhooks: Webhooks
  readonly #children: Children
  readonly #parentWrites: ParentWrites
  readonly #queue = new WorkQueue()
  readonly #customizeCache = new Map<string, CustomizeEntry>()
  readonly #unwatch: () => void
  /** resyncPeriodSeconds: when every parent is next re-queued */
  readonly #periodic: { everyMs: number; nextMs: number } | undefined
  /** serve(): wakes the loop when a watch event queues a parent */
  #wake: (() => void) | undefined

  constructor(
    controller: CompositeController,
    cluster: ClusterBackend,
    transport: HookTransport,
    options: SimulatorOptions = {},
  ) {
    this.#cluster = cluster
    this.#controller = withVersionOverride(deepCopy(controller), options.hookVersion)
    const { spec } = this.#controller
    this.#parent = resource(spec.parentResource.apiVersion, spec.parentResource.resource)
    const rules: ChildRule[] = (spec.childResources ?? []).map((rule) => ({
      resource: resource(rule.apiVersion, rule.resource),
      method: rule.updateStrategy?.method ?? 'OnDelete',
    }))
    const context = {
      cluster,
      write: <T>(result: SyncResult, request: () => Awaitable<T>) => this.#write(result, request),
    }
    this.#webhooks = new Webhooks(this.#controller, transport, options, () => cluster.now())
    this.#children = new Children(context, rules, spec.generateSelector === true)
    const finalizer = `metacontroller.io/compositecontroller-${controller.metadata.name}`
    this.#parentWrites = new ParentWrites(context, finalizer, () => this.#webhooks.hook('finalize') !== undefined)
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
        const recent = this.history
          .slice(-5)
          .map((r) => `${r.parent.namespace}/${r.parent.name}: ${r.outcome} (${r.writes} writes)`)
        throw new Error(
          `not quiet after ${maxSteps} syncs; still queued: ${this.#queue.ready().join(', ')}; last: ${recent.join('; ')}`,
        )
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
      const due = [this.#queue.nextDue(), this.#periodic?.nextMs].filter(
        (t): t is number => t !== undefined && t <= targetMs,
      )
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
        if (error.seconds <= 0)
          result.warnings.push('429 without a positive Retry-After: Metacontroller retries immediately (a hot loop)')
        this.#queue.addAt(key, this.#nowMs() + error.seconds * 1000, this.#nowMs())
      } else {
        const message = messageOf(error)
        result.outcome = 'error'
        result.errors.push(message)
        const event: SimEvent = {
          time: this.#cluster.timestamp(),
          type: 'Warning',
          reason: 'SyncError',
          message: `Sync error: ${message}`,
          parent: result.parent,
        }
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
    parent = await this.#parentWrites.syncFinalizer(parent, result)
    const finalizing = this.#webhooks.hook('finalize') !== undefined && parent.metadata.deletionTimestamp !== undefined
    const hookName = finalizing ? 'finalize' : 'sync'
    result.hook = hookName
    const version = this.#webhooks.version(hookName)

    const selector = this.#children.selector(parent)
    const observed = await this.#children.claim(parent, selector, result)
    const related = await this.#relatedObjects(parent, version, result)
    const request: SyncRequest = {
      controller: deepCopy(this.#controller),
      parent: sortKeys(parent),
      children: sortKeys(
        groupObjects(
          observed.map(([rule, objects]) => [rule.resource, objects]),
          version,
        ),
      ),
      related: sortKeys(related),
      finalizing,
    }
    result.request = request
    const answer = await this.#webhooks.sync(hookName, parent, request, result)
    for (const child of answer.children ?? []) {
      child.metadata = isObject(child.metadata) ? child.metadata : ({} as KubeObject['metadata'])
      child.metadata.namespace ??= parent.metadata.namespace
    }

    if (answer.resyncAfterSeconds > 0) {
      result.resyncAfterSeconds = answer.resyncAfterSeconds
      this.#queue.addAt(keyOf(parent), this.#nowMs() + answer.resyncAfterSeconds * 1000, this.#nowMs())
    }
    if (answer.finalized) {
      if (!finalizing)
        result.warnings.push(
          'finalized: true in a sync answer removes the finalizer, which is added back next sync (it flaps)',
        )
      parent = await this.#parentWrites.removeFinalizer(parent, result)
    }

    const desired = this.#children.desired(parent, answer.children ?? [], selector)
    const manageErrors: string[] = []
    if (parent.metadata.deletionTimestamp === undefined || this.#parentWrites.shouldFinalize(parent)) {
      await this.#children.manage(
        parent,
        observed.flatMap(([, objects]) => objects),
        desired,
        result,
        manageErrors,
      )
    }
    await this.#parentWrites.updateStatus(parent, answer.status, result)
    if (manageErrors.length > 0) {
      throw new Error(`can't reconcile children for ${describe(refOf(parent))}: ${manageErrors.join('; ')}`)
    }
  }

  // ---- related objects (the customize hook's rules, cached per parent generation) ----

  /** Related objects, keyed for the sync/finalize hook's `version` (the rules follow the customize hook's). */
  async #relatedObjects(
    parent: KubeObject,
    version: HookVersion,
    result: SyncResult,
  ): Promise<Record<string, Record<string, KubeObject>>> {
    if (this.#webhooks.hook('customize') === undefined) return {}
    const rules = await this.#customizeRules(parent, result)
    const groups: Array<[ResourceType, KubeObject[]]> = []
    for (const rule of rules) {
      const resolved = resolveRule(rule, parent, this.#webhooks.version('customize'))
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
    const rules = await this.#webhooks.customize(
      parent,
      request,
      result as SyncResult & { customize: NonNullable<SyncResult['customize']> },
    )
    this.#customizeCache.set(cacheKey, { rules, expiresAtMs: this.#nowMs() + CUSTOMIZE_CACHE_MS })
    return rules
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
    if (this.#children.isChildKind(obj)) {
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
        if (this.#children.selector(parent)(object.metadata.labels)) this.#queue.add(keyOf(parent))
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
          const { matches } = resolveRule(rule, parent, this.#webhooks.version('customize'))
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
