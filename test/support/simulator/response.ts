// Decoding hook answers the way Metacontroller's Go structs do: case-sensitive field names, JSON null is "not
// set", a wrong JSON type is an error, unknown fields are an error in strict mode and ignored in loose mode.
import { isObject, type JsonObject } from './json.js'
import type { KubeObject, LabelSelector } from './objects.js'

export interface SyncAnswer {
  /** null when the hook sent none: the parent's status becomes `{observedGeneration}` */
  status: JsonObject | null
  /** null when the hook sent none: every child is deleted */
  children: KubeObject[] | null
  resyncAfterSeconds: number
  finalized: boolean
}

export interface RelatedRule {
  apiVersion: string
  resource: string
  labelSelector?: LabelSelector | null
  namespaceSelector?: LabelSelector | null
  namespace?: string
  names?: string[] | null
}

export interface Decoded<T> {
  answer: T
  /** fields a loose-mode decode ignored (a typo such as "Children" ends up here) */
  ignoredFields: string[]
}

/** A hook answer that would crash Metacontroller itself (a nil pointer), not just fail the sync. */
export class CrashError extends Error {
  override readonly name = 'CrashError'
}

type Schema =
  'any' | 'string' | 'number' | 'boolean' | { object: Record<string, Schema> } | { array: Schema } | { map: Schema }

const LABEL_SELECTOR: Schema = {
  object: {
    matchLabels: { map: 'string' },
    matchExpressions: { array: { object: { key: 'string', operator: 'string', values: { array: 'string' } } } },
  },
}

const SYNC_RESPONSE: Schema = {
  object: { status: { map: 'any' }, children: { array: 'any' }, resyncAfterSeconds: 'number', finalized: 'boolean' },
}

const CUSTOMIZE_RESPONSE: Schema = {
  object: {
    relatedResources: {
      array: {
        object: {
          apiVersion: 'string',
          resource: 'string',
          labelSelector: LABEL_SELECTOR,
          namespaceSelector: LABEL_SELECTOR,
          namespace: 'string',
          names: { array: 'string' },
        },
      },
    },
  },
}

export function decodeSyncAnswer(body: unknown, strict: boolean): Decoded<SyncAnswer> {
  const ignoredFields = decode(body, SYNC_RESPONSE, strict)
  const fields = isObject(body) ? body : {}
  const children = fields.children as unknown[] | null | undefined
  for (const [i, child] of (children ?? []).entries()) {
    if (child === null) continue
    if (!isObject(child))
      throw new Error(`json: cannot unmarshal ${jsonType(child)} into children[${i}] of type unstructured.Unstructured`)
    if (typeof child.kind !== 'string' || child.kind === '')
      throw new Error(`Object 'Kind' is missing in '${JSON.stringify(child)}'`)
  }
  // Go decodes [null] into a nil pointer, which the controller dereferences: the process panics.
  if (children?.includes(null))
    throw new CrashError('children contains null: Metacontroller would panic (nil pointer dereference)')
  return {
    answer: {
      status: (fields.status ?? null) as JsonObject | null,
      children: (children ?? null) as KubeObject[] | null,
      resyncAfterSeconds: (fields.resyncAfterSeconds ?? 0) as number,
      finalized: (fields.finalized ?? false) as boolean,
    },
    ignoredFields,
  }
}

export function decodeCustomizeAnswer(body: unknown, strict: boolean): Decoded<RelatedRule[]> {
  const ignoredFields = decode(body, CUSTOMIZE_RESPONSE, strict)
  const rules = ((isObject(body) ? body.relatedResources : null) ?? []) as Array<RelatedRule | null>
  if (rules.includes(null))
    throw new CrashError('relatedResources contains null: Metacontroller would panic (nil pointer dereference)')
  return { answer: rules as RelatedRule[], ignoredFields }
}

/** Checks `value` against `schema`; returns the unknown fields (an error in strict mode). */
function decode(value: unknown, schema: Schema, strict: boolean): string[] {
  const unknown: string[] = []
  check(value, schema, '', unknown)
  if (strict && unknown.length > 0) {
    throw new Error(`strict validation failed: ${unknown.map((field) => `unknown field "${field}"`).join(', ')}`)
  }
  return unknown
}

function check(value: unknown, schema: Schema, path: string, unknown: string[]): void {
  if (value === null || schema === 'any') return
  if (typeof schema === 'string') {
    if (typeof value !== schema) throw typeError(value, path, schema)
    return
  }
  if ('array' in schema) {
    if (!Array.isArray(value)) throw typeError(value, path, 'array')
    value.forEach((item, i) => check(item, schema.array, `${path}[${i}]`, unknown))
    return
  }
  if (!isObject(value)) throw typeError(value, path, 'object')
  for (const [key, item] of Object.entries(value)) {
    const field = path === '' ? key : `${path}.${key}`
    if ('map' in schema) check(item, schema.map, field, unknown)
    else if (Object.hasOwn(schema.object, key)) check(item, schema.object[key] as Schema, field, unknown)
    else unknown.push(field)
  }
}

function typeError(value: unknown, path: string, expected: string): Error {
  return new Error(
    `json: cannot unmarshal ${jsonType(value)} into ${path === '' ? 'the response' : `field ${path}`} of type ${expected}`,
  )
}

function jsonType(value: unknown): string {
  return Array.isArray(value) ? 'array' : typeof value
}
