/**
 * Request validation: compiled validators shared by schema, so /sync and /finalize (the same request schema)
 * compile it once; that and not serialising answers through fast-json-stringify (they are sent as the exact bytes
 * their ETag was computed from) keep cold start short. The validator is the hooks' one (../contract/validator.ts: ajv).
 *
 * In dist/server.js the two request schemas come compiled already (./precompiled.ts), and ajv compiles nothing at
 * start unless some other schema turns up.
 */
import type { ValidateFunction } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'
import {
  CustomizeRequestSchema,
  PoolCustomizeRequestSchema,
  PoolSyncRequestSchema,
  SyncRequestSchema,
} from '../contract/protocol.js'
import { compileSchema, VALIDATION_OPTIONS } from '../contract/validator.js'
import { PRECOMPILED } from './precompiled.js'

export { VALIDATION_OPTIONS }

/** The schemas the build compiles ahead of time, by name (scripts/bundle.mjs). */
export const PRECOMPILABLE: Readonly<Record<string, object>> = {
  sync: SyncRequestSchema,
  customize: CustomizeRequestSchema,
  poolSync: PoolSyncRequestSchema,
  poolCustomize: PoolCustomizeRequestSchema,
}

export function sharedValidatorCompiler(
  precompiled: Readonly<Partial<Record<string, ValidateFunction>>> = PRECOMPILED,
): FastifySchemaCompiler<object> {
  const compiled = new Map<object, ValidateFunction>()
  for (const [name, schema] of Object.entries(PRECOMPILABLE)) {
    const validate = precompiled[name]
    if (validate !== undefined) compiled.set(schema, validate)
  }
  return ({ schema }) => {
    let validate = compiled.get(schema)
    if (validate === undefined) {
      validate = compileSchema(schema)
      compiled.set(schema, validate)
    }
    return validate
  }
}
