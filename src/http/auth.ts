/**
 * Bearer-token authentication of the hook routes (HOOK_TOKEN). Anyone who can POST to /sync can mint flags,
 * so the check runs in onRequest, before the body is read, and compares in constant time.
 */
import { hash, timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { errorBody } from './errors.js'

// crypto.hash: the one-shot digest, several times cheaper than createHash for a short input (Node >= 20.12).
function digest(value: string): Buffer {
  return hash('sha256', value, 'buffer')
}

/**
 * A check of an Authorization header against any of the tokens. Hashing both sides first makes each comparison
 * constant-time whatever the lengths; the tokens are hashed once here, so a call hashes only what it presents.
 * Every token is compared, whichever matches.
 */
export function bearerMatcher(tokens: readonly string[]): (header: string | undefined) => boolean {
  const expected = tokens.map(digest)
  return (header) => {
    const presented = header !== undefined && /^Bearer /i.test(header) ? header.slice(7).trim() : ''
    const hashed = digest(presented)
    let accepted = false
    for (const token of expected) accepted = timingSafeEqual(hashed, token) || accepted
    return accepted && presented !== ''
  }
}

/** Any of the tokens (the current one, and the previous one during a rotation); the 401 names `variable`. */
export function requireBearer(tokens: readonly string[], variable = 'HOOK_TOKEN', what = 'hook') {
  const matches = bearerMatcher(tokens)
  return async function checkBearer(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (matches(request.headers.authorization)) return
    request.log.warn({ [what]: request.routeOptions.url }, `${what} call without a valid bearer token`)
    await reply
      .code(401)
      .header('www-authenticate', 'Bearer')
      .send(errorBody(401, `This ${what} needs the header Authorization: Bearer <${variable}>.`))
  }
}
