/**
 * The one validator of the hooks: ajv, for the requests (src/http/validation.ts), the definitions
 * (src/challenge/definition.ts) and the author preview. It reads a schema as the API server does: a string's
 * length counts characters (code points, not UTF-16 units) and patterns match characters (the `u` flag), so the
 * hook never refuses a value the API server stored under the same bound.
 *
 * Compiling is most of a cold start once the modules are loaded, and two of ajv's steps add nothing here: checking
 * each schema against the JSON Schema meta-schema (which compiles the meta-schema first) and optimising the
 * generated code. Without them a schema compiles in under half the time, and a call validates in the same
 * microseconds. The schemas are this project's own; test/http/validation.test.ts checks them against the
 * meta-schema instead. dist/server.js brings its validators compiled by the build (scripts/bundle.mjs).
 */
import { Ajv, type ValidateFunction } from 'ajv'

/** How values are validated: report, never repair (no type coercion, no defaults, no removal of fields). */
export const VALIDATION_OPTIONS = {
  coerceTypes: false,
  useDefaults: false,
  removeAdditional: false,
  allErrors: false,
  strict: false,
} as const

/**
 * The options of a validator whose errors are told to people (a definition's author, the preview's user): each
 * error carries the schema it broke, for describeSchemaError (src/challenge/schema-errors.ts).
 */
export const DESCRIBED_OPTIONS = { ...VALIDATION_OPTIONS, verbose: true } as const

const instances = new Map<object, Ajv>()

/** `schema` compiled with `options` (VALIDATION_OPTIONS or DESCRIBED_OPTIONS); one ajv instance per options. */
export function compileSchema(
  schema: object,
  options: typeof VALIDATION_OPTIONS | typeof DESCRIBED_OPTIONS = VALIDATION_OPTIONS,
): ValidateFunction {
  let ajv = instances.get(options)
  if (ajv === undefined) {
    ajv = new Ajv({ ...options, validateSchema: false, code: { optimize: false } })
    instances.set(options, ajv)
  }
  return ajv.compile(schema)
}
