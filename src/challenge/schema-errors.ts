/** Turns a schema error into a sentence naming the field, e.g. `spec.pod.containers[0].image: Expected string`. */
import { DATE_TIME, DIGITS } from '../patterns.js'
import { quote } from './read.js'

export interface SchemaError {
  path: string
  message: string
  schema?: object
}

/** Patterns too long to quote to an author, by what they stand for. */
const PATTERN_WORDS = new Map<unknown, string>([[DATE_TIME, 'is not a date-time (RFC 3339, such as 2026-11-27T18:00:00Z)']])

/** A key an author wrote that reads as itself in a path; any other key is quoted (it may be markup). */
const PLAIN_KEY = /^[A-Za-z0-9_.\/~-]{1,128}$/
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
  const message = error.message === 'Unexpected property' ? 'is not allowed' : (PATTERN_WORDS.get((error.schema as { pattern?: unknown } | undefined)?.pattern) ?? error.message)
  return `${fieldPath(root, error.path)}: ${message}`
}
