/**
 * Who is calling: a platform's backend with one of its keys, naming the owner it vouches for in the header
 * Challenge-Owner, or a player's browser with a short-lived JWT the platform minted (verified with jose), whose `sub`
 * alone names the owner. Each platform's credentials are scoped to namespaces. Every refusal is a 401 or 403 whose
 * message names what is wrong; nothing of a key or a token is ever echoed.
 *
 * The platforms file (GATEWAY_PLATFORMS_FILE, a mounted Secret), YAML or JSON:
 *
 *   platforms:
 *     - name: ctfd                    # a token's `iss`
 *       namespaces: [challenges]      # the first is the default
 *       keys: [<key>, <next key>]     # several during a rotation
 *       tokens: { hs256: <shared key> }          # or { publicKey: <PEM>, algorithm: EdDSA | ES256 }, or { jwks: {keys: [...]} }
 */
import { hash, timingSafeEqual } from 'node:crypto'
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  importSPKI,
  jwtVerify,
  type JWK,
  type JWTVerifyGetKey,
  type KeyInput,
} from 'jose'
import { parse } from 'yaml'
import { ConfigError } from '../config/config-parsers.js'
import { DNS_LABEL } from '../contract/patterns.js'
import { readTime } from '../challenge/time.js'
import { parseOwner, ownerText, sameOwner, type Owner } from './names.js'

/** The longest a token may live: a stolen one is worth little, and the page renews it (docs/gateway-api.md). */
export const MAX_TOKEN_SECONDS = 600
/** Shorter keys are refused at start: a key is all a platform's backend needs to act for any of its owners. */
export const MIN_KEY_LENGTH = 32
export const OWNER_HEADER = 'challenge-owner'

export interface Platform {
  name: string
  namespaces: string[]
  /** SHA-256 of each key: compared in constant time, whatever the lengths. */
  keys: Buffer[]
  tokens?: { key: KeyInput | JWTVerifyGetKey; algorithms: string[] }
  /** The end of the platform's event: every instance it ensures ends then at the latest (spec.deadline). */
  deadline?: string
}

export interface Caller {
  platform: Platform
  via: 'key' | 'token'
  /** The owner acted for: a token's `sub` (or, for an admin token, the header), the header for a key. */
  owner: Owner | undefined
  admin: boolean
}

export type Refusal = { statusCode: 401 | 403; message: string }

const digest = (value: string): Buffer => hash('sha256', value, 'buffer')
const NAMESPACE = new RegExp(DNS_LABEL)

type Raw = Record<string, unknown>
const isObject = (value: unknown): value is Raw => typeof value === 'object' && value !== null && !Array.isArray(value)

async function tokenKey(name: string, tokens: unknown): Promise<Platform['tokens']> {
  const where = `platform ${name}: tokens`
  if (tokens === undefined) return undefined
  if (!isObject(tokens)) throw new ConfigError('GATEWAY_PLATFORMS_FILE', `${where} must be a map`)
  if (typeof tokens.hs256 === 'string') {
    if (tokens.hs256.length < MIN_KEY_LENGTH)
      throw new ConfigError('GATEWAY_PLATFORMS_FILE', `${where}.hs256 must be at least ${MIN_KEY_LENGTH} characters`)
    return { key: new TextEncoder().encode(tokens.hs256), algorithms: ['HS256'] }
  }
  if (typeof tokens.publicKey === 'string') {
    const algorithm = tokens.algorithm
    if (algorithm !== 'EdDSA' && algorithm !== 'ES256')
      throw new ConfigError('GATEWAY_PLATFORMS_FILE', `${where}.algorithm must be EdDSA or ES256 beside publicKey`)
    try {
      return { key: await importSPKI(tokens.publicKey, algorithm), algorithms: [algorithm] }
    } catch (error) {
      throw new ConfigError('GATEWAY_PLATFORMS_FILE', `${where}.publicKey: ${(error as Error).message}`)
    }
  }
  if (isObject(tokens.jwks) && Array.isArray(tokens.jwks.keys)) {
    try {
      return { key: createLocalJWKSet({ keys: tokens.jwks.keys as JWK[] }), algorithms: ['EdDSA', 'ES256'] }
    } catch (error) {
      throw new ConfigError('GATEWAY_PLATFORMS_FILE', `${where}.jwks: ${(error as Error).message}`)
    }
  }
  throw new ConfigError('GATEWAY_PLATFORMS_FILE', `${where} needs hs256, publicKey with algorithm, or jwks`)
}

/** The platforms file, checked whole: a problem is a ConfigError naming the platform and the field. */
export async function loadPlatforms(text: string): Promise<Platform[]> {
  let document: unknown
  try {
    document = parse(text)
  } catch (error) {
    throw new ConfigError('GATEWAY_PLATFORMS_FILE', `is not YAML or JSON: ${(error as Error).message}`)
  }
  const list = isObject(document) ? document.platforms : undefined
  if (!Array.isArray(list) || list.length === 0)
    throw new ConfigError('GATEWAY_PLATFORMS_FILE', 'must hold a list `platforms` of at least one platform')
  const platforms: Platform[] = []
  for (const [index, entry] of list.entries()) {
    const name = isObject(entry) && typeof entry.name === 'string' && entry.name !== '' ? entry.name : undefined
    if (name === undefined || platforms.some((platform) => platform.name === name))
      throw new ConfigError('GATEWAY_PLATFORMS_FILE', `platforms[${index}] needs a name of its own`)
    const raw = entry as Raw
    const namespaces = raw.namespaces
    if (!Array.isArray(namespaces) || namespaces.length === 0 || !namespaces.every((ns) => NAMESPACE.test(String(ns))))
      throw new ConfigError('GATEWAY_PLATFORMS_FILE', `platform ${name}: namespaces must list namespace names`)
    const keys = Array.isArray(raw.keys) ? raw.keys : []
    if (!keys.every((key) => typeof key === 'string' && key.length >= MIN_KEY_LENGTH))
      throw new ConfigError(
        'GATEWAY_PLATFORMS_FILE',
        `platform ${name}: each key must be at least ${MIN_KEY_LENGTH} characters`,
      )
    const tokens = await tokenKey(name, raw.tokens)
    if (keys.length === 0 && tokens === undefined)
      throw new ConfigError('GATEWAY_PLATFORMS_FILE', `platform ${name} has neither keys nor tokens`)
    const deadline = raw.deadline
    // Read as the API server reads spec.deadline, where it ends up.
    if (deadline !== undefined && readTime(deadline) === undefined)
      throw new ConfigError(
        'GATEWAY_PLATFORMS_FILE',
        `platform ${name}: deadline must be an RFC 3339 time such as 2026-11-29T18:00:00Z, got ${JSON.stringify(deadline)}`,
      )
    platforms.push({
      name,
      namespaces: namespaces as string[],
      keys: (keys as string[]).map(digest),
      tokens,
      ...(deadline === undefined ? {} : { deadline: deadline as string }),
    })
  }
  return platforms
}

const refuse = (statusCode: 401 | 403, message: string): Refusal => ({ statusCode, message })

/** The header Challenge-Owner, when sent: the owner a platform's backend (or an admin token) acts for. */
function headerOwner(header: string | undefined): { owner: Owner | undefined } | Refusal {
  if (header === undefined) return { owner: undefined }
  const parsed = parseOwner(header)
  return 'problem' in parsed ? refuse(403, `The header Challenge-Owner ${parsed.problem}.`) : { owner: parsed.owner }
}

/** A platform key, compared with every key of every platform (each in constant time), whichever matches. */
function byKey(presented: string, platforms: readonly Platform[]): Platform | undefined {
  const hashed = digest(presented)
  let found: Platform | undefined
  for (const platform of platforms)
    for (const key of platform.keys) if (timingSafeEqual(hashed, key) && found === undefined) found = platform
  return found
}

/** jose's refusal, in words naming the claim. */
function tokenProblem(error: unknown, platform: Platform, audience: string): string {
  if (error instanceof errors.JWTExpired) return 'The token has expired (exp).'
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf') return 'The token is not valid yet (nbf).'
    if (error.claim === 'aud') return `The token's aud is not this gateway's audience ${JSON.stringify(audience)}.`
    if (error.reason === 'missing') return `The token has no ${error.claim} claim.`
    return `The token's ${error.claim} claim is not valid: ${error.message}.`
  }
  if (error instanceof errors.JOSEAlgNotAllowed)
    return `The token's alg is not accepted from platform ${platform.name} (accepted: ${platform.tokens?.algorithms.join(', ')}).`
  if (error instanceof errors.JWSSignatureVerificationFailed) return "The token's signature does not verify."
  return `The token cannot be verified: ${(error as Error).message}.`
}

async function byToken(
  token: string,
  platforms: readonly Platform[],
  audience: string,
  now: Date,
): Promise<{ platform: Platform; sub: string; admin: boolean } | Refusal> {
  let issuer: unknown
  let alg: unknown
  try {
    alg = decodeProtectedHeader(token).alg
    issuer = decodeJwt(token).iss
  } catch (error) {
    return refuse(401, `The bearer is not a JWT: ${(error as Error).message}.`)
  }
  if (alg === 'none') return refuse(401, 'The token is not signed (alg none).')
  const platform = platforms.find((candidate) => candidate.name === issuer)
  if (platform === undefined) return refuse(401, `The token's iss names no platform of this gateway.`)
  if (platform.tokens === undefined) return refuse(401, `Platform ${platform.name} has no token key on this gateway.`)
  try {
    const { payload } = await jwtVerify(token, platform.tokens.key as Uint8Array, {
      audience,
      issuer: platform.name,
      algorithms: platform.tokens.algorithms,
      requiredClaims: ['exp', 'sub'],
      currentDate: now,
    })
    if ((payload.exp as number) - now.getTime() / 1000 > MAX_TOKEN_SECONDS)
      return refuse(
        401,
        `The token's exp is more than ${MAX_TOKEN_SECONDS / 60} minutes ahead; mint shorter-lived tokens.`,
      )
    return { platform, sub: payload.sub as string, admin: payload.admin === true }
  } catch (error) {
    return refuse(401, tokenProblem(error, platform, audience))
  }
}

export interface Credentials {
  authorization: string | undefined
  ownerHeader: string | undefined
}

/** The caller, or why not. The owner comes from a token's `sub` alone unless the token says `admin: true`. */
export async function authenticate(
  { authorization, ownerHeader }: Credentials,
  platforms: readonly Platform[],
  audience: string,
  now: Date,
): Promise<Caller | Refusal> {
  const presented = authorization !== undefined && /^Bearer /i.test(authorization) ? authorization.slice(7).trim() : ''
  if (presented === '')
    return refuse(401, 'Send Authorization: Bearer <a platform key, or a token the platform minted>.')
  const header = headerOwner(ownerHeader)
  if ('statusCode' in header) return header
  // A JWT is three base64url parts; a key has no dots in it (docs/gateway-api.md).
  if (presented.split('.').length !== 3) {
    const platform = byKey(presented, platforms)
    if (platform === undefined) return refuse(401, 'The bearer is not a key of any platform of this gateway.')
    return { platform, via: 'key', owner: header.owner, admin: true }
  }
  const verified = await byToken(presented, platforms, audience, now)
  if ('statusCode' in verified) return verified
  const subject = parseOwner(verified.sub)
  if ('problem' in subject) return refuse(401, `The token's sub ${subject.problem}.`)
  if (header.owner !== undefined && !sameOwner(subject.owner, header.owner) && !verified.admin) {
    return refuse(
      403,
      `This token acts for ${ownerText(subject.owner)} only; the header Challenge-Owner names ${ownerText(header.owner)}.`,
    )
  }
  return { platform: verified.platform, via: 'token', owner: header.owner ?? subject.owner, admin: verified.admin }
}

/** The namespace a call acts in: `?namespace=` when the platform is scoped to it, else the platform's first. */
export function namespaceOf(caller: Caller, asked: string | undefined): { namespace: string } | Refusal {
  if (asked === undefined) return { namespace: caller.platform.namespaces[0] as string }
  if (caller.platform.namespaces.includes(asked)) return { namespace: asked }
  return refuse(
    403,
    `Platform ${caller.platform.name}'s credentials are scoped to the namespaces ${caller.platform.namespaces.join(', ')}, not ${asked}.`,
  )
}
