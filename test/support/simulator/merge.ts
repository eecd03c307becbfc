// Metacontroller's client-side apply (pkg/dynamic/apply, "dynamic-apply", its default): a three-way merge of the
// observed object, the configuration last applied (kept in an annotation) and the hook's desired object. Fields the
// hook never set (a Service's clusterIP and nodePorts, API server defaults) survive; fields it stopped setting go.
import { deepCopy, isObject, setOwn, sortKeys, type JsonObject } from './json.js'
import type { KubeObject } from './objects.js'

export const LAST_APPLIED = 'metacontroller.k8s.io/last-applied-configuration'

/** Metadata the API server owns: an update never changes them. */
const SYSTEM_METADATA = [
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'managedFields',
] as const

/** Items of a list are matched by the first of these fields they all have ("list maps"). */
const MERGE_KEYS = ['containerPort', 'port', 'mountPath', 'name', 'uid', 'ip', 'path']

/** Records `applied` as the last-applied configuration of `obj` (on create, and after every update). */
export function setLastApplied(obj: KubeObject, applied: KubeObject): void {
  obj.metadata.annotations = { ...obj.metadata.annotations, [LAST_APPLIED]: JSON.stringify(sortKeys(applied)) }
}

/** The object an InPlace update would write: `observed` changed from its last-applied configuration to `desired`. */
export function applyUpdate(observed: KubeObject, desired: KubeObject): KubeObject {
  const lastAppliedJson = observed.metadata.annotations?.[LAST_APPLIED]
  const lastApplied: unknown = lastAppliedJson ? JSON.parse(lastAppliedJson) : undefined
  const update = deepCopy(desired)
  if (update.metadata.annotations) delete update.metadata.annotations[LAST_APPLIED]
  const merged = merge('', deepCopy(observed), lastApplied, update) as KubeObject
  for (const field of SYSTEM_METADATA)
    restore(merged.metadata as unknown as JsonObject, observed.metadata as unknown as JsonObject, field)
  restore(merged, observed, 'status')
  setLastApplied(merged, update)
  return merged
}

function restore(target: JsonObject, source: JsonObject, field: string): void {
  if (field in source) target[field] = source[field]
  else delete target[field]
}

/** The diff from lastApplied to desired, applied to destination; returns the new destination value. */
export function merge(path: string, destination: unknown, lastApplied: unknown, desired: unknown): unknown {
  if (isObject(destination)) {
    return mergeObject(
      path,
      destination,
      expect(path, 'lastApplied', lastApplied, isObject),
      expect(path, 'desired', desired, isObject),
    )
  }
  if (Array.isArray(destination)) {
    return mergeArray(
      path,
      destination,
      expect(path, 'lastApplied', lastApplied, Array.isArray),
      expect(path, 'desired', desired, Array.isArray),
    )
  }
  return desired
}

/** `value` if it has the destination's shape, undefined for null/undefined, an error otherwise. */
function expect<T>(path: string, side: string, value: unknown, hasShape: (v: unknown) => v is T): T | undefined {
  if (value === undefined || value === null) return undefined
  if (hasShape(value)) return value
  throw new Error(
    `can't merge desired changes: ${side}${path}: expecting ${hasShape === isObject ? 'an object' : 'an array'}, got ${JSON.stringify(value)}`,
  )
}

function mergeObject(
  path: string,
  destination: JsonObject,
  lastApplied: JsonObject = {},
  desired: JsonObject = {},
): JsonObject {
  for (const key of Object.keys(lastApplied)) if (!Object.hasOwn(desired, key)) delete destination[key]
  for (const [key, value] of Object.entries(desired)) {
    setOwn(
      destination,
      key,
      merge(
        `${path}[${key}]`,
        Object.hasOwn(destination, key) ? destination[key] : undefined,
        Object.hasOwn(lastApplied, key) ? lastApplied[key] : undefined,
        value,
      ),
    )
  }
  return destination
}

function mergeArray(
  path: string,
  destination: unknown[],
  lastApplied: unknown[] = [],
  desired?: unknown[],
): unknown[] | null {
  const wanted = desired ?? []
  const key = listMapKey(destination, lastApplied, wanted)
  // A plain list is replaced as a whole (by null, when desired is null).
  if (key === undefined) return desired ?? null
  const byKey = (list: unknown[]) => Object.fromEntries(list.map((item) => [String((item as JsonObject)[key]), item]))
  const merged = mergeObject(path, byKey(destination), byKey(lastApplied), byKey(wanted))
  // Keep the order of the items that were already there, then append new ones in desired order.
  const order = [...destination, ...wanted].map((item) => String((item as JsonObject)[key]))
  return [...new Set(order)].filter((k) => k in merged).map((k) => merged[k])
}

/** The merge key every item of every list has, when all items are objects. */
function listMapKey(...lists: unknown[][]): string | undefined {
  const items = lists.flat()
  if (items.length === 0 || !items.every(isObject)) return undefined
  return MERGE_KEYS.find((key) => items.every((item) => key in item))
}
