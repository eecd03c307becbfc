// JSON value helpers (and two small deterministic helpers) shared by the cluster and the simulator. Everything stored or sent is plain JSON,
// so a JSON round trip is a faithful deep copy (and strips `undefined`, as the wire would).

export type JsonObject = Record<string, unknown>

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * `object[key] = value` as JSON.parse and the API server do it: an own data property even for "__proto__", where an
 * assignment would replace the object's prototype instead (and the key would vanish from what is stored and sent).
 */
export function setOwn(object: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true })
}

export function deepCopy<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T)
}

/** Structural equality of JSON values; object key order does not matter (like Go's reflect.DeepEqual on maps). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => deepEqual(item, b[i]))
  }
  if (!isObject(a) || !isObject(b)) return false
  const keys = Object.keys(a)
  return (
    keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && deepEqual(a[key], b[key]))
  )
}

/** A copy with object keys in sorted order, as Go's encoding/json writes maps (parents, children, related). */
export function sortKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item) => sortKeys(item) as unknown) as T
  if (!isObject(value)) return value
  const sorted: JsonObject = {}
  for (const key of Object.keys(value).sort()) setOwn(sorted, key, sortKeys(value[key]))
  return sorted as T
}

/** The first of candidate(0), candidate(1), ... that is not in `used`: deterministic allocation. */
export function firstFree<T>(used: Set<T>, candidate: (i: number) => T): T {
  let i = 0
  while (used.has(candidate(i))) i++
  return candidate(i)
}

/** A short, stable, non-cryptographic hash (FNV-1a, 32 bit) used for deterministic names and addresses. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash
}
