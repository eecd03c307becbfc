/** Turns a schema error into a sentence naming the field, e.g. `spec.pod.containers[0].image: Expected string`. */
import type { ErrorObject } from 'ajv'
import { DATE_TIME, DIGITS } from '../contract/patterns.js'
import { quote } from './untrusted.js'

export interface SchemaError {
  path: string
  message: string
  schema?: object
}

/** Patterns too long to quote to an author, by what they stand for. */
const PATTERN_WORDS = new Map<unknown, string>([
  [DATE_TIME, 'is not a date-time (RFC 3339, such as 2026-11-27T18:00:00Z)'],
])

/** A key an author wrote that reads as itself in a path; any other key is quoted (it may be markup). */
const PLAIN_KEY = /^[A-Za-z0-9_./~-]{1,128}$/
const INDEX = new RegExp(DIGITS)

/** One step of a field path: `[0]` for an index, `.name` for a plain key, `["…"]` for any other key. */
export function pathStep(key: string, inArray: boolean): string {
  if (inArray) return `[${key}]`
  return PLAIN_KEY.test(key) ? `.${key}` : `[${quote(key)}]`
}

/** `/pod/containers/0/image` under `spec` becomes `spec.pod.containers[0].image`. */
export function fieldPath(root: string, pointer: string): string {
  let path = root
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    path += pathStep(segment, INDEX.test(segment))
  }
  return path
}

export function describeSchemaError(root: string, error: SchemaError): string {
  const message =
    error.message === 'Unexpected property'
      ? 'is not allowed'
      : (PATTERN_WORDS.get((error.schema as { pattern?: unknown } | undefined)?.pattern) ?? error.message)
  return `${fieldPath(root, error.path)}: ${message}`
}

/** A key as one segment of a JSON pointer. */
const pointerStep = (key: string) => `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`

/** `Expected integer to be …` or `Expected number to be …`: the schema the bound belongs to says which. */
const bounded = (error: ErrorObject, relation: string) =>
  `Expected ${(error.parentSchema as { type?: string } | undefined)?.type === 'integer' ? 'integer' : 'number'} to be ${relation} ${String(error.params.limit)}`

/** The message of each keyword, worded as the hook has always told authors (TypeBox's words). */
const WORDS: Record<string, (error: ErrorObject) => string> = {
  type: (error) => `Expected ${String(error.params.type)}`,
  required: () => 'Expected required property',
  additionalProperties: () => 'Unexpected property',
  anyOf: () => 'Expected union value',
  const: (error) =>
    `Expected ${typeof error.params.allowedValue === 'string' ? `'${error.params.allowedValue}'` : String(error.params.allowedValue)}`,
  pattern: (error) => `Expected string to match '${String(error.params.pattern)}'`,
  minLength: (error) => `Expected string length greater or equal to ${String(error.params.limit)}`,
  maxLength: (error) => `Expected string length less or equal to ${String(error.params.limit)}`,
  minItems: (error) => `Expected array length to be greater or equal to ${String(error.params.limit)}`,
  maxItems: (error) => `Expected array length to be less or equal to ${String(error.params.limit)}`,
  minProperties: (error) => `Expected object to have at least ${String(error.params.limit)} properties`,
  maxProperties: (error) => `Expected object to have no more than ${String(error.params.limit)} properties`,
  minimum: (error) => bounded(error, 'greater or equal to'),
  maximum: (error) => bounded(error, 'less or equal to'),
  exclusiveMinimum: (error) => bounded(error, 'greater than'),
  exclusiveMaximum: (error) => bounded(error, 'less than'),
}

/**
 * The error a validator compiled with DESCRIBED_OPTIONS (../contract/validator.ts) reports: the one that stopped it. That is
 * the last one: a union that no branch matched lists its branches' errors, then its own, which names the field.
 * A missing or unexpected property is named at its own path, as a field an author wrote or left out.
 */
export function schemaError(errors: readonly ErrorObject[]): SchemaError {
  const error = errors[errors.length - 1] as ErrorObject
  // ajv's params of these two keywords name the property.
  const key = (
    error.keyword === 'required'
      ? error.params.missingProperty
      : error.keyword === 'additionalProperties'
        ? error.params.additionalProperty
        : undefined
  ) as string | undefined
  const words = WORDS[error.keyword]
  return {
    path: key === undefined ? error.instancePath : `${error.instancePath}${pointerStep(String(key))}`,
    message: words === undefined ? String(error.message) : words(error),
    schema: error.parentSchema,
  }
}
