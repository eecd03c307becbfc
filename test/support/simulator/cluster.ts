// An in-memory API server: unstructured objects with the metadata a real one maintains (uid, resourceVersion,
// generation, creationTimestamp, managedFields), deletion with finalizers, a controllable clock and a watch feed.
// Controllers (Deployments, garbage collection, load balancers, gateway routes, kubelet) run only when a test asks for them.
import { admit, ApiError, invalid } from './admission.js'
import { applySchema, customResourceSchemas, type CustomResourceSchema } from './crd.js'
import { reconcileRoutes } from './gateways.js'
import { deepCopy, deepEqual, isObject, setOwn, type JsonObject } from './json.js'
import {
  labelMatcher,
  refOf,
  resourceByKind,
  type KubeObject,
  type ManagedFieldsEntry,
  type ObjectRef,
} from './objects.js'
import {
  collectGarbage,
  provisionLoadBalancers,
  rolloutDeployments,
  runBarePods,
  terminatePods,
  type PodFailureMode,
  type WorkloadTarget,
} from './workloads.js'

export { ApiError } from './admission.js'
export type { PodFailureMode, WorkloadTarget } from './workloads.js'

export interface ClusterOptions {
  /** the clock's start (default 2025-01-01T00:00:00Z) */
  start?: Date | string
  /** whether LoadBalancer Services get an address on settle() unless set per Service (default true) */
  loadBalancersReady?: boolean
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED'
  /** the object after the change (for DELETED: its last state) */
  object: KubeObject
  /** the object before the change (MODIFIED and DELETED) */
  previous?: KubeObject
}

export type WatchListener = (event: WatchEvent) => void

export interface DeleteOptions {
  /** precondition: only delete this incarnation */
  uid?: string
  /** Pods default to 30 (they linger until the kubelet finishes); everything else to 0 */
  gracePeriodSeconds?: number
}

/** Kinds whose metadata.generation the API server does not maintain. */
const WITHOUT_GENERATION = new Set(['Secret', 'ConfigMap', 'Service'])

export function timestamp(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z')
}

export class Cluster {
  readonly #objects = new Map<string, KubeObject>()
  readonly #listeners = new Set<WatchListener>()
  readonly #podFailures: Array<{ target: WorkloadTarget; mode: PodFailureMode }> = []
  readonly #loadBalancers = new Map<string, boolean>()
  readonly #loadBalancersReady: boolean
  readonly #customResources = new Map<string, CustomResourceSchema>()
  #clockMs: number
  #uids = 0
  #resourceVersion = 0
  /** Writes that changed something; a write that changes nothing is free, as on a real API server. */
  writes = 0

  constructor(options: ClusterOptions = {}) {
    this.#clockMs = new Date(options.start ?? '2025-01-01T00:00:00Z').getTime()
    this.#loadBalancersReady = options.loadBalancersReady ?? true
  }

  // ---- clock ----

  now(): Date {
    return new Date(this.#clockMs)
  }

  /** now() as Kubernetes writes times (RFC 3339, whole seconds) */
  timestamp(): string {
    return timestamp(this.now())
  }

  advance(seconds: number): void {
    this.#clockMs += Math.round(seconds * 1000)
  }

  // ---- reads (always copies) ----

  get(ref: ObjectRef): KubeObject | undefined {
    return deepCopy(this.#objects.get(keyOf(ref)))
  }

  /** Objects of one kind, sorted by namespace and name; all namespaces when `namespace` is omitted. */
  list(apiVersion: string, kind: string, namespace?: string): KubeObject[] {
    // Filter before copying: copies are what the callers get, and most objects are of other kinds.
    return this.#sorted(
      (obj) =>
        obj.apiVersion === apiVersion &&
        obj.kind === kind &&
        (namespace === undefined || obj.metadata.namespace === namespace),
    )
  }

  all(): KubeObject[] {
    return this.#sorted(() => true)
  }

  #sorted(keep: (obj: KubeObject) => boolean): KubeObject[] {
    return [...this.#objects.entries()]
      .filter(([, obj]) => keep(obj))
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, obj]) => deepCopy(obj))
  }

  // ---- writes ----

  create(obj: KubeObject, manager = 'test'): KubeObject {
    const next = deepCopy(obj)
    if (typeof next.apiVersion !== 'string' || typeof next.kind !== 'string' || !isObject(next.metadata)) {
      throw new ApiError('Invalid', 'Object is invalid: apiVersion, kind and metadata are required')
    }
    if (next.metadata.resourceVersion !== undefined) {
      throw invalid(next, 'metadata.resourceVersion: Invalid value: must be empty on create')
    }
    const meta = next.metadata
    meta.uid = this.#newUid()
    meta.creationTimestamp = this.timestamp()
    meta.generation = 1
    if (WITHOUT_GENERATION.has(next.kind)) delete meta.generation
    delete meta.deletionTimestamp
    delete meta.deletionGracePeriodSeconds
    delete meta.managedFields
    // With a status subresource, status is not writable through the main resource.
    if (this.#hasStatusSubresource(next)) delete next.status
    this.#applySchema(next)
    admit(next, undefined, this)
    if (this.#objects.has(keyOf(toRef(next)))) {
      throw new ApiError('AlreadyExists', `${next.kind} "${meta.name}" already exists`)
    }
    return this.#commit(next, undefined, manager)
  }

  /** Replaces everything but system metadata (and status, for kinds with a status subresource). */
  update(obj: KubeObject, manager = 'test'): KubeObject {
    const previous = this.#stored(obj)
    const next = deepCopy(obj)
    for (const field of [
      'uid',
      'creationTimestamp',
      'deletionTimestamp',
      'deletionGracePeriodSeconds',
      'generation',
      'managedFields',
    ] as const) {
      copyField(next.metadata, previous.metadata, field)
    }
    if (this.#hasStatusSubresource(next)) copyField(next, previous, 'status')
    this.#applySchema(next)
    admit(next, previous, this)
    if (next.metadata.generation !== undefined && !deepEqual(content(next), content(previous)))
      next.metadata.generation += 1
    return this.#commit(next, previous, manager)
  }

  /** The binding subresource: sets spec.nodeName; like the API server, it records no field manager. */
  bind(pod: KubeObject, node: string): KubeObject {
    const previous = this.#stored(pod)
    const next = deepCopy(previous)
    ;(next.spec as JsonObject).nodeName = node
    return this.#commit(next, previous)
  }

  /** Writes only `.status` (the status subresource). */
  updateStatus(obj: KubeObject, manager = 'test'): KubeObject {
    const previous = this.#stored(obj)
    const next = deepCopy(previous)
    copyField(next, deepCopy(obj), 'status')
    this.#applySchema(next)
    return this.#commit(next, previous, manager, 'status')
  }

  /** Create, or update ignoring resourceVersion: a test's `kubectl apply`. */
  put(obj: KubeObject, manager = 'test'): KubeObject {
    const copy = deepCopy(obj)
    delete copy.metadata.resourceVersion
    return this.#objects.has(keyOf(toRef(copy))) ? this.update(copy, manager) : this.create(copy, manager)
  }

  /**
   * Deletes like the API server: objects with finalizers (and Pods bound to a node and still running, which
   * wait for the kubelet) get a deletionTimestamp and stay; the rest disappear. Returns the object if it is still there.
   */
  delete(ref: ObjectRef, options: DeleteOptions = {}): KubeObject | undefined {
    const previous = this.#stored(ref)
    if (options.uid !== undefined && options.uid !== previous.metadata.uid) {
      throw new ApiError(
        'Conflict',
        `Precondition failed: UID in precondition: ${options.uid}, UID in object meta: ${String(previous.metadata.uid)}`,
      )
    }
    const next = deepCopy(previous)
    const meta = next.metadata
    const grace =
      next.kind === 'Pod' && !podWaitsForKubelet(next)
        ? 0
        : (options.gracePeriodSeconds ?? (next.kind === 'Pod' ? 30 : 0))
    if (meta.deletionTimestamp === undefined) {
      meta.deletionTimestamp = this.timestamp()
      // The API server bumps generation when it records a deletion request.
      if (meta.generation !== undefined) meta.generation += 1
    }
    meta.deletionGracePeriodSeconds = Math.min(meta.deletionGracePeriodSeconds ?? grace, grace)
    const final = this.#commit(next, previous)
    return this.#objects.has(keyOf(ref)) ? final : undefined
  }

  /**
   * Makes writes of a custom resource behave as with this CustomResourceDefinition (apiextensions.k8s.io/v1,
   * e.g. parsed from the project's manifests): undeclared fields are pruned, defaults filled in, and its
   * status subresource (or lack of one) respected.
   */
  registerCRD(crd: KubeObject): void {
    for (const schema of customResourceSchemas(crd))
      this.#customResources.set(`${schema.apiVersion}|${schema.kind}`, schema)
  }

  watch(listener: WatchListener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  // ---- cluster behaviour (controllers); tests call these explicitly ----

  /** One round of every controller; returns the number of writes it made. */
  settle(): number {
    const before = this.writes
    this.terminatePods()
    this.collectGarbage()
    this.rolloutDeployments()
    this.runBarePods()
    this.provisionLoadBalancers()
    this.reconcileRoutes()
    return this.writes - before
  }

  /** kubelet: Pods marked for deletion in an earlier step disappear. */
  terminatePods(): void {
    terminatePods(this)
  }

  /** Garbage collector: objects whose owners are all gone are deleted (background propagation). */
  collectGarbage(): void {
    collectGarbage(this)
  }

  /** Deployment controller, scheduler and kubelet: Pods for every Deployment, their status, the Deployment's status. */
  rolloutDeployments(): void {
    rolloutDeployments(this)
  }

  /** Scheduler and kubelet: bare Pods (the hook's workload) are bound and get their status. */
  runBarePods(): void {
    runBarePods(this)
  }

  /** Cloud controller: LoadBalancer Services get (or lose) an ingress address. */
  provisionLoadBalancers(): void {
    provisionLoadBalancers(this)
  }

  /** Gateway API controller: HTTPRoutes and TLSRoutes get their parent Gateways' verdict in status.parents[]. */
  reconcileRoutes(): void {
    reconcileRoutes(this)
  }

  /** How the Pods of matching Deployments fail from the next settle() on (`none` heals). The latest matching call wins. */
  setPodFailure(target: WorkloadTarget, mode: PodFailureMode): void {
    this.#podFailures.push({ target, mode })
  }

  /** The failure mode of the workload `name` in `namespace` whose pods carry `labels` (the last one set wins). */
  podFailureFor(namespace: string, name: string, labels: Record<string, string>): PodFailureMode {
    const matching = this.#podFailures.filter(({ target }) =>
      'workload' in target
        ? target.namespace === namespace && target.workload === name
        : (target.namespace ?? namespace) === namespace && labelMatcher({ matchLabels: target.labels })(labels),
    )
    return matching.at(-1)?.mode ?? 'none'
  }

  setLoadBalancerReady(namespace: string, name: string, ready: boolean): void {
    this.#loadBalancers.set(`${namespace}/${name}`, ready)
  }

  isLoadBalancerReady(namespace: string, name: string): boolean {
    return this.#loadBalancers.get(`${namespace}/${name}`) ?? this.#loadBalancersReady
  }

  // ---- internals ----

  /** Kinds we do not know (a test's own CRD) are treated like CRDs with a status subresource. */
  #hasStatusSubresource(obj: KubeObject): boolean {
    const custom = this.#customResources.get(`${obj.apiVersion}|${obj.kind}`)
    return custom?.statusSubresource ?? resourceByKind(obj.apiVersion, obj.kind)?.statusSubresource ?? true
  }

  #applySchema(obj: KubeObject): void {
    const custom = this.#customResources.get(`${obj.apiVersion}|${obj.kind}`)
    if (custom !== undefined) applySchema(obj, custom.schema)
  }

  /** The stored object (a copy); with a KubeObject carrying a resourceVersion, also the optimistic-concurrency check. */
  #stored(target: ObjectRef | KubeObject): KubeObject {
    const ref = toRef(target)
    const stored = this.#objects.get(keyOf(ref))
    if (!stored) throw new ApiError('NotFound', `${ref.kind} "${ref.name}" not found`)
    const rv = 'metadata' in target ? target.metadata.resourceVersion : undefined
    if (rv !== undefined && rv !== stored.metadata.resourceVersion) {
      throw new ApiError(
        'Conflict',
        `Operation cannot be fulfilled on ${ref.kind} "${ref.name}": the object has been modified; please apply your changes to the latest version and try again`,
      )
    }
    return deepCopy(stored)
  }

  /**
   * Stores `next` unless nothing changed; removes it when its deletion is complete. Emits the watch event.
   * Returns the final state (for a removed object, its last one, as the API server answers).
   */
  #commit(next: KubeObject, previous: KubeObject | undefined, manager?: string, subresource?: 'status'): KubeObject {
    if (previous && deepEqual(withoutBookkeeping(next), withoutBookkeeping(previous))) return previous
    const meta = next.metadata
    meta.resourceVersion = String(++this.#resourceVersion)
    if (manager !== undefined) {
      // Update semantics: the writer owns what it set (a create: the whole object, defaults included; an update:
      // what it changed); a field no longer there is nobody's.
      const owned = fieldSet(
        previous === undefined
          ? writtenPart(next, subresource)
          : changedPart(writtenPart(next, subresource), writtenPart(previous, subresource)),
      )
      const present = withFields(fieldSet(writtenPart(next)), fieldSet(writtenPart(next, 'status')))
      meta.managedFields = recordOwnership(
        meta.managedFields,
        { manager, apiVersion: next.apiVersion, time: this.timestamp(), subresource },
        owned,
        present,
      )
    }
    this.writes += 1
    const key = keyOf(toRef(next))
    const gone =
      meta.deletionTimestamp !== undefined &&
      (meta.finalizers ?? []).length === 0 &&
      meta.deletionGracePeriodSeconds === 0
    if (gone) this.#objects.delete(key)
    else this.#objects.set(key, next)
    const type = gone ? 'DELETED' : previous ? 'MODIFIED' : 'ADDED'
    for (const listener of this.#listeners) listener({ type, object: deepCopy(next), previous: deepCopy(previous) })
    return deepCopy(next)
  }

  #newUid(): string {
    const n = ++this.#uids
    const hex = n.toString(16).padStart(12, '0')
    return `${(0x5eed0000 + n).toString(16)}-0000-4000-8000-${hex}`
  }
}

function toRef(target: ObjectRef | KubeObject): ObjectRef {
  return 'metadata' in target ? refOf(target) : target
}

function keyOf(ref: ObjectRef): string {
  return `${ref.apiVersion}|${ref.kind}|${ref.namespace}|${ref.name}`
}

function copyField<T extends object>(target: T, source: T, field: keyof T): void {
  if (source[field] === undefined) delete target[field]
  else target[field] = source[field]
}

/** What metadata.generation tracks: everything but metadata and status. */
function content(obj: KubeObject): JsonObject {
  const { metadata: _metadata, status: _status, ...rest } = obj
  return rest
}

function withoutBookkeeping(obj: KubeObject): KubeObject {
  const { resourceVersion: _rv, managedFields: _mf, ...metadata } = obj.metadata
  return { ...obj, metadata }
}

// ---- managedFields: one entry per (manager, subresource), describing the fields of the object it wrote ----

const LIST_KEYS = ['name', 'containerPort', 'port', 'uid', 'type', 'mountPath', 'ip', 'key']

/** The part of an object a write covers: its status (the status subresource), or all but status and system metadata. */
function writtenPart(obj: KubeObject, subresource?: 'status'): JsonObject {
  const { labels, annotations, finalizers, ownerReferences } = obj.metadata
  const { metadata: _m, status, apiVersion: _a, kind: _k, ...body } = obj
  return deepCopy(
    subresource ? { status } : { metadata: { labels, annotations, finalizers, ownerReferences }, ...body },
  )
}

/** The parts of `next` that differ from `previous`: whole values, keyed list items by their key. */
function changedPart(next: unknown, previous: unknown): unknown {
  if (isObject(next) && isObject(previous)) {
    const changed: JsonObject = {}
    for (const [key, value] of Object.entries(next)) {
      if (value === undefined || deepEqual(value, previous[key])) continue
      setOwn(changed, key, Object.hasOwn(previous, key) ? changedPart(value, previous[key]) : value)
    }
    return changed
  }
  if (Array.isArray(next) && Array.isArray(previous)) {
    const keyOfItem = (item: unknown) => (isObject(item) ? LIST_KEYS.find((k) => k in item) : undefined)
    const key = keyOfItem(next[0])
    // Keyed lists merge item by item; any other list is one value.
    if (key === undefined || deepEqual(next, previous)) return next
    return next
      .filter((item) => !previous.some((old) => deepEqual(old, item)))
      .map((item) => {
        const old = previous.find((candidate) => isObject(candidate) && isObject(item) && candidate[key] === item[key])
        return old === undefined
          ? item
          : { [key]: (item as JsonObject)[key], ...(changedPart(item, old) as JsonObject) }
      })
  }
  return next
}

interface Writer {
  manager: string
  apiVersion: string
  time: string
  subresource: 'status' | undefined
}

/**
 * One entry per (manager, subresource): the writer's entry gains the fields it set (and its time), every other
 * entry loses them, and an entry left with nothing is dropped, as the API server tracks Update operations.
 */
function recordOwnership(
  entries: ManagedFieldsEntry[] = [],
  writer: Writer,
  owned: JsonObject,
  present: JsonObject,
): ManagedFieldsEntry[] {
  if (Object.keys(owned).length === 0) return entries
  const same = (entry: ManagedFieldsEntry) =>
    entry.manager === writer.manager && entry.subresource === writer.subresource
  const others = entries
    .filter((entry) => !same(entry))
    .map((entry) => ({ ...entry, fieldsV1: onlyFields(withoutFields(entry.fieldsV1, owned), present) }))
    .filter((entry) => Object.keys(entry.fieldsV1).length > 0)
  const entry: ManagedFieldsEntry = {
    manager: writer.manager,
    operation: 'Update',
    apiVersion: writer.apiVersion,
    time: writer.time,
    fieldsType: 'FieldsV1',
    fieldsV1: onlyFields(withFields(entries.find(same)?.fieldsV1 ?? {}, owned), present),
  }
  if (writer.subresource) entry.subresource = writer.subresource
  return [...others, entry]
}

function withFields(set: JsonObject, added: JsonObject): JsonObject {
  const result = deepCopy(set)
  for (const [key, value] of Object.entries(added))
    result[key] = withFields(isObject(result[key]) ? result[key] : {}, value as JsonObject)
  return result
}

/** The fields of `set` that are also in `present` (the object as stored). */
function onlyFields(set: JsonObject, present: JsonObject): JsonObject {
  const result: JsonObject = {}
  for (const [key, value] of Object.entries(set)) {
    if (!isObject(present[key])) continue
    // A leaf, or an atomic value (only its own marker): kept whole while it is there.
    if (Object.keys(value as JsonObject).every((k) => k === '.')) {
      result[key] = value
      continue
    }
    const kept = onlyFields(value as JsonObject, present[key])
    if (Object.keys(kept).some((k) => k !== '.')) result[key] = kept
  }
  return result
}

/** `set` without the fields of `removed`; a field left holding only its own marker (".") goes too. */
function withoutFields(set: JsonObject, removed: JsonObject): JsonObject {
  const result: JsonObject = {}
  for (const [key, value] of Object.entries(set)) {
    const gone = removed[key]
    if (key === '.' || gone === undefined) {
      result[key] = value
      continue
    }
    if (Object.keys(gone as JsonObject).length === 0) continue
    const rest = withoutFields(value as JsonObject, gone as JsonObject)
    if (Object.keys(rest).some((k) => k !== '.')) result[key] = rest
  }
  return result
}

/** A FieldsV1 set: `f:<field>` for object fields, `k:{...}` for keyed list items, `v:<value>` for scalar list items. */
function fieldSet(value: unknown): JsonObject {
  const set: JsonObject = {}
  if (Array.isArray(value)) {
    for (const item of value) {
      const key = isObject(item) ? LIST_KEYS.find((k) => k in item) : undefined
      if (key !== undefined)
        set[`k:${JSON.stringify({ [key]: (item as JsonObject)[key] })}`] = { '.': {}, ...fieldSet(item) }
      else if (!isObject(item)) set[`v:${JSON.stringify(item)}`] = {}
    }
  } else if (isObject(value)) {
    for (const [field, child] of Object.entries(value)) {
      set[`f:${field}`] = isObject(child) || Array.isArray(child) ? { '.': {}, ...fieldSet(child) } : {}
    }
  }
  return set
}

/** The API server deletes a Pod at once when no kubelet has it (unscheduled) or it has ended (pod strategy). */
function podWaitsForKubelet(pod: KubeObject): boolean {
  const phase = (pod.status as JsonObject | undefined)?.phase
  return (pod.spec as JsonObject | undefined)?.nodeName !== undefined && phase !== 'Succeeded' && phase !== 'Failed'
}
