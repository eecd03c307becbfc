/**
 * Request validation: one ajv instance whose compiled validators are shared by schema, so /sync and /finalize
 * (the same request schema) compile it once; that and not serialising answers through fast-json-stringify (they
 * are sent as the exact bytes their ETag was computed from) keep cold start short.
 */
import { Ajv, type ValidateFunction } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'

export function sharedValidatorCompiler(): FastifySchemaCompiler<object> {
  // Report, never repair: no type coercion, no defaults, no removal of fields a caller sent.
  const ajv = new Ajv({ coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: false, strict: false })
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
