// What the API server does with a CustomResourceDefinition's structural schema on every write: fields the
// schema does not declare are pruned (silently: a status field missing from the CRD is lost, and the hook sees
// the loss on its next call), and declared defaults are filled in. Validation (enum, pattern, CEL) is not done.
import { deepCopy, isObject, setOwn, type JsonObject } from './json.js'
import type { KubeObject } from './objects.js'

export interface CustomResourceSchema {
  apiVersion: string
  kind: string
  statusSubresource: boolean
  schema: JsonObject
}

/** One entry per version of an apiextensions.k8s.io/v1 CustomResourceDefinition. */
export function customResourceSchemas(crd: KubeObject): CustomResourceSchema[] {
  const spec = crd.spec as { group: string; names: { kind: string }; versions: JsonObject[] }
  return spec.versions.map((version) => ({
    apiVersion: `${spec.group}/${String(version.name)}`,
    kind: spec.names.kind,
    statusSubresource: isObject(version.subresources) && isObject(version.subresources.status),
    schema: (version.schema as { openAPIV3Schema: JsonObject }).openAPIV3Schema,
  }))
}

const SERVER_FIELDS = ['apiVersion', 'kind', 'metadata']

/** Prunes and defaults `obj` in place; apiVersion, kind and metadata are the API server's, never pruned. */
export function applySchema(obj: KubeObject, schema: JsonObject): void {
  const body = Object.fromEntries(Object.entries(obj).filter(([key]) => !SERVER_FIELDS.includes(key)))
  const properties = Object.entries((schema.properties ?? {}) as Record<string, JsonObject>).filter(
    ([key]) => !SERVER_FIELDS.includes(key),
  )
  const shaped = structure(body, { ...schema, properties: Object.fromEntries(properties) }) as JsonObject
  for (const key of Object.keys(body)) delete obj[key]
  for (const [key, value] of Object.entries(shaped)) setOwn(obj, key, value)
}

function structure(value: unknown, schema: JsonObject): unknown {
  if (Array.isArray(value)) {
    return isObject(schema.items) ? value.map((item) => structure(item, schema.items as JsonObject)) : value
  }
  if (!isObject(value)) return value
  const properties = (schema.properties ?? {}) as Record<string, JsonObject>
  const additional = schema.additionalProperties
  const keepUnknown = schema['x-kubernetes-preserve-unknown-fields'] === true || additional === true
  const result: JsonObject = {}
  for (const [key, item] of Object.entries(value)) {
    const itemSchema = properties[key] ?? (isObject(additional) ? additional : undefined)
    // null in a field that is not nullable is dropped (and may then be defaulted).
    if (itemSchema !== undefined && !(item === null && itemSchema.nullable !== true))
      setOwn(result, key, structure(item, itemSchema))
    else if (itemSchema === undefined && keepUnknown) setOwn(result, key, item)
  }
  for (const [key, itemSchema] of Object.entries(properties)) {
    if (result[key] === undefined && 'default' in itemSchema)
      result[key] = structure(deepCopy(itemSchema.default), itemSchema)
  }
  return result
}
