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
 *
 * In dist/server.js the two request schemas come compiled already (./precompiled.ts), and ajv is not even
 * instantiated unless some other schema turns up.
 */
import { Ajv, type ValidateFunction } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'
import { CustomizeRequestSchema, SyncRequestSchema } from '../protocol.js'
import { PRECOMPILED } from './precompiled.js'

/** How requests are validated: report, never repair (no type coercion, no defaults, no removal of fields). */
export const VALIDATION_OPTIONS = { coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: false, strict: false } as const

/** The schemas the build compiles ahead of time, by name (scripts/bundle.mjs). */
export const PRECOMPILABLE: Readonly<Record<string, object>> = { sync: SyncRequestSchema, customize: CustomizeRequestSchema }

export function sharedValidatorCompiler(precompiled: Readonly<Partial<Record<string, ValidateFunction>>> = PRECOMPILED): FastifySchemaCompiler<object> {
  const compiled = new Map<object, ValidateFunction>()
  for (const [name, schema] of Object.entries(PRECOMPILABLE)) {
    const validate = precompiled[name]
    if (validate !== undefined) compiled.set(schema, validate)
  }
  let ajv: Ajv | undefined
  return ({ schema }) => {
    let validate = compiled.get(schema)
    if (validate === undefined) {
      ajv ??= new Ajv({ ...VALIDATION_OPTIONS, validateSchema: false, code: { optimize: false } })
      validate = ajv.compile(schema)
      compiled.set(schema, validate)
    }
    return validate
  }
}
