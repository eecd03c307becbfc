/**
 * The definition validator compiled ahead of time. Undefined here: the build (scripts/bundle.mjs) puts ajv's
 * standalone code for DefinitionSpecSchema in this module's place in dist/server.js, so the server compiles no
 * schema at start. Tests, which run src/, compile it at first use (./definition.ts).
 */
import type { ValidateFunction } from 'ajv'

export const PRECOMPILED_DEFINITION: ValidateFunction | undefined = undefined
