/**
 * The request validators compiled ahead of time, by the names of validation.ts's PRECOMPILABLE. Empty here: the
 * build (scripts/bundle.mjs) puts ajv's standalone code for those schemas in this module's place in
 * dist/server.js, so the server compiles no schema at start. Tests, which run src/, compile them at first use.
 */
import type { ValidateFunction } from 'ajv'

export const PRECOMPILED: Readonly<Partial<Record<string, ValidateFunction>>> = {}
