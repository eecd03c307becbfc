// Metacontroller's pkg/hooks, as the stand-in calls the hooks: which hooks are enabled and in which version,
// webhookExecutor.Call (status codes, 429 and Retry-After, the ETag cache) and the decoding of an answer (strict or
// loose), with what loose mode ignored noted as a warning of the sync.
import type { CompositeController, Hook, SimulatorOptions, SyncRequest, SyncResult } from './controller.js'
import type { HookName, HookResponse, HookTransport } from './hooks.js'
import { deepCopy } from './json.js'
import { describe, refOf, type KubeObject } from './objects.js'
import type { HookVersion } from './related.js'
import { CrashError, decodeCustomizeAnswer, decodeSyncAnswer, type RelatedRule, type SyncAnswer } from './response.js'

/** A 429: the parent is synced again after `seconds`, with no event and no backoff. */
export class RetryAfter extends Error {
  constructor(readonly seconds: number) {
    super(`too many requests: retry after ${seconds}s`)
  }
}

export class Webhooks {
  readonly #controller: CompositeController
  readonly #transport: HookTransport
  readonly #options: SimulatorOptions
  readonly #now: () => Date
  readonly #etags = new Map<string, { etag: string; body: unknown }>()

  constructor(controller: CompositeController, transport: HookTransport, options: SimulatorOptions, now: () => Date) {
    this.#controller = controller
    this.#transport = transport
    this.#options = options
    this.#now = now
  }

  /** The hook, when enabled: Metacontroller only enables a hook that has a webhook. */
  hook(name: HookName): Hook | undefined {
    const hook = this.#controller.spec.hooks?.[name]
    return hook?.webhook === undefined ? undefined : hook
  }

  version(name: HookName): HookVersion {
    return this.#controller.spec.hooks?.[name]?.version ?? 'v1'
  }

  /** The sync or finalize hook's answer to `request` (the cached one after a 304), recorded in `result`. */
  async sync(
    hookName: 'sync' | 'finalize',
    parent: KubeObject,
    request: SyncRequest,
    result: SyncResult,
  ): Promise<SyncAnswer> {
    if (this.hook(hookName) === undefined) {
      throw new Error(`sync hook nil//not defined for ${describe(refOf(parent))} (a hook needs a webhook)`)
    }
    const { response, headers, body } = await this.#call(hookName, request, parent)
    result.requestHeaders = headers
    result.response = response
    const decoded = decodeWith(() => decodeSyncAnswer(body, this.#strict(hookName)), hookName, this.version(hookName))
    noteIgnoredFields(decoded.ignoredFields, hookName, result)
    result.answer = decoded.answer
    return decoded.answer
  }

  /** The customize hook's related rules for `parent`, recorded in `result.customize` (which the caller has set). */
  async customize(
    parent: KubeObject,
    request: object,
    result: SyncResult & { customize: NonNullable<SyncResult['customize']> },
  ): Promise<RelatedRule[]> {
    const { response, body } = await this.#call('customize', request, parent)
    result.customize.response = response
    const decoded = decodeWith(
      () => decodeCustomizeAnswer(body, this.#strict('customize')),
      'customize',
      this.version('customize'),
    )
    noteIgnoredFields(decoded.ignoredFields, 'customize', result)
    result.customize.rules = decoded.answer
    return decoded.answer
  }

  /** pkg/hooks webhookExecutor.Call: status handling, 429, ETag. Returns the body to decode. */
  async #call(
    hook: HookName,
    request: object,
    parent: KubeObject,
  ): Promise<{ response: HookResponse; headers: Record<string, string>; body: unknown }> {
    const etagKey = `${hook}|${parent.kind}|${parent.metadata.namespace}/${parent.metadata.name}`
    const cached = this.#etagEnabled(hook) ? this.#etags.get(etagKey) : undefined
    const headers: Record<string, string> = cached ? { 'If-None-Match': cached.etag } : {}
    let response: HookResponse
    try {
      // A copy: whatever the hook does to its request cannot reach the cluster or the recorded request.
      response = await this.#transport.call(hook, deepCopy(request), headers)
    } catch (error) {
      throw new Error(`${hook} hook failed: http error: ${messageOf(error)}`, { cause: error })
    }
    if (response.statusCode === 429)
      throw new RetryAfter(retryAfterSeconds(header(response, 'retry-after'), this.#now()))
    const text = String(response.text ?? JSON.stringify(response.body))
    if (cached && (response.statusCode === 304 || response.statusCode === 412)) {
      return { response, headers, body: deepCopy(cached.body) }
    }
    if (response.statusCode !== 200) {
      throw new Error(`${hook} hook failed: unsupported status code: ${response.statusCode} body: ${text}`)
    }
    if (response.body === undefined) {
      throw new Error(
        `${hook} hook failed: can't unmarshal webhookResponse: not JSON: ${JSON.stringify(text.slice(0, 200))}`,
      )
    }
    const etag = header(response, 'etag')
    if (this.#etagEnabled(hook) && etag !== undefined) this.#etags.set(etagKey, { etag, body: deepCopy(response.body) })
    return { response, headers, body: deepCopy(response.body) }
  }

  #strict(name: HookName): boolean {
    const mode = this.hook(name)?.webhook?.responseUnMarshallMode
    return (mode ?? (this.version(name) === 'v2' ? 'strict' : 'loose')) === 'strict'
  }

  #etagEnabled(name: HookName): boolean {
    return this.#options.etag ?? this.hook(name)?.webhook?.etag?.enabled ?? false
  }
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function noteIgnoredFields(fields: string[], hook: HookName, result: SyncResult): void {
  for (const field of fields) result.warnings.push(`${hook} answer: unknown field "${field}" ignored (loose mode)`)
}

function decodeWith<T>(decode: () => T, hook: HookName, version: HookVersion): T {
  try {
    return decode()
  } catch (error) {
    if (error instanceof CrashError)
      throw new Error(`${hook} hook answer would crash Metacontroller: ${error.message}`, { cause: error })
    throw new Error(`${hook} hook failed (version=${version}): ${(error as Error).message}`, { cause: error })
  }
}

function header(response: HookResponse, name: string): string | undefined {
  return Object.entries(response.headers).find(([key]) => key.toLowerCase() === name)?.[1]
}

/** Go: an RFC 1123 date, else an integer (Atoi), else 0 (an immediate retry). */
function retryAfterSeconds(value: string | undefined, now: Date): number {
  if (value !== undefined && /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [A-Z]{3}$/.test(value)) {
    return Math.ceil((Date.parse(value) - now.getTime()) / 1000)
  }
  return value !== undefined && /^[+-]?\d+$/.test(value) ? Number.parseInt(value, 10) : 0
}
