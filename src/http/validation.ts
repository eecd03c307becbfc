/**
 * Request validation: one ajv instance whose compiled validators are shared by schema, so /sync and /finalize
 * (the same request schema) compile it once; that and not serialising answers through fast-json-stringify (they
 * are sent as the exact bytes their ETag was computed from) keep cold start short.
 *
 * Compiling is most of a cold start once the modules are loaded, and two of ajv's steps add nothing here: checking
 * each schema against the JSON Schema meta-schema (which compiles the meta-schema first) and optimising the
 * generated code. Without them the two request schemas compile in under half the time, and a call validates in
 * the same microseconds. The schemas are this project's own; test/http/validation.test.ts checks them against the
 * meta-schema instead.
 */
import { Ajv, type ValidateFunction } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'

/** How requests are validated: report, never repair (no type coercion, no defaults, no removal of fields). */
export const VALIDATION_OPTIONS = { coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: false, strict: false } as const

export function sharedValidatorCompiler(): FastifySchemaCompiler<object> {
  const ajv = new Ajv({
    ...VALIDATION_OPTIONS,
    validateSchema: false,
    code: { optimize: false },
  })
  const compiled = new Map<object, ValidateFunction>()
  return ({ schema }) => {
    let validate = compiled.get(schema)
    if (validate === undefined) {
      validate = ajv.compile(schema)
      compiled.set(schema, validate)
    }
    return validate
  }
}
