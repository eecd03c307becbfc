/**
 * Bearer-token authentication of the hook routes (HOOK_TOKEN). Anyone who can POST to /sync can mint flags,
 * so the check runs in onRequest, before the body is read, and compares in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { errorBody } from './errors.js'

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest()
}

/** Hashing both sides first makes the comparison constant-time whatever the lengths. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const presented = header !== undefined && /^Bearer /i.test(header) ? header.slice(7).trim() : ''
  return timingSafeEqual(digest(presented), digest(token)) && presented !== ''
}

/** Any of the tokens (the current one, and the previous one during a rotation); every one is compared. */
export function requireBearer(tokens: readonly string[]) {
  return async function checkBearer(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    let accepted = false
    for (const token of tokens) accepted = bearerMatches(request.headers.authorization, token) || accepted
    if (accepted) return
    request.log.warn({ hook: request.routeOptions.url }, 'hook call without a valid bearer token')
    await reply
      .code(401)
      .header('www-authenticate', 'Bearer')
      .send(errorBody(401, 'This hook needs the header Authorization: Bearer <HOOK_TOKEN>.'))
  }
}
