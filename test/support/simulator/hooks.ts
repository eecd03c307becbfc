// How the simulator reaches the hooks: an interface, with transports over real HTTP (global fetch), over a
// Fastify-style `inject` (no socket), and a helper for in-test fake hooks.

export type HookName = 'sync' | 'finalize' | 'customize'

export interface HookResponse {
  statusCode: number
  /** header names in any case; the simulator looks them up case-insensitively */
  headers: Record<string, string | undefined>
  /** parsed JSON, or undefined when the body is empty or not JSON */
  body: unknown
  /** the raw body, when the transport has it (error events quote it) */
  text?: string
}

export interface HookTransport {
  call(hook: HookName, body: unknown, headers?: Record<string, string>): Promise<HookResponse>
}

export interface EndpointOptions {
  /** sent as `Authorization: Bearer <token>` (webhook `authorization`) */
  token?: string
  /** path per hook; default `/<hook>` */
  paths?: Partial<Record<HookName, string>>
}

export interface HttpOptions extends EndpointOptions {
  /** Metacontroller's webhook.timeout, default 10 s */
  timeoutMs?: number
}

export function httpTransport(baseUrl: string, options: HttpOptions = {}): HookTransport {
  return {
    async call(hook, body, headers = {}) {
      const response = await fetch(new URL(pathOf(hook, options), baseUrl), {
        method: 'POST',
        headers: requestHeaders(headers, options),
        body: JSON.stringify(body),
        // A redirect comes back as its 3xx status: an error, as the protocol says.
        redirect: 'manual',
        signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
      })
      const text = await response.text()
      return { statusCode: response.status, headers: Object.fromEntries(response.headers), body: parseJson(text), text }
    },
  }
}

/** The part of a Fastify instance (light-my-request) this transport uses. */
export interface Injectable {
  inject(request: {
    method: 'POST'
    url: string
    headers: Record<string, string>
    payload: string
  }): PromiseLike<{ statusCode: number; headers: Record<string, unknown>; body: string }>
}

/** Calls an in-process app (e.g. a Fastify instance, before listen) through `app.inject`. */
export function injectTransport(app: Injectable, options: EndpointOptions = {}): HookTransport {
  return {
    async call(hook, body, headers = {}) {
      const response = await app.inject({
        method: 'POST',
        url: pathOf(hook, options),
        headers: requestHeaders(headers, options),
        payload: JSON.stringify(body),
      })
      const responseHeaders: Record<string, string> = {}
      for (const [name, value] of Object.entries(response.headers)) {
        if (value !== undefined) responseHeaders[name] = Array.isArray(value) ? value.join(', ') : String(value)
      }
      return {
        statusCode: response.statusCode,
        headers: responseHeaders,
        body: parseJson(response.body),
        text: response.body,
      }
    },
  }
}

/** A response for fake hooks: JSON body, status 200 unless given. */
export function jsonResponse(body: unknown, statusCode = 200, headers: Record<string, string> = {}): HookResponse {
  const text = JSON.stringify(body)
  return { statusCode, headers: { 'content-type': 'application/json', ...headers }, body: parseJson(text), text }
}

function pathOf(hook: HookName, options: EndpointOptions): string {
  return options.paths?.[hook] ?? `/${hook}`
}

function requestHeaders(headers: Record<string, string>, options: EndpointOptions): Record<string, string> {
  const result: Record<string, string> = { 'content-type': 'application/json', ...headers }
  if (options.token !== undefined) result.authorization = `Bearer ${options.token}`
  return result
}

function parseJson(text: string | undefined): unknown {
  try {
    return JSON.parse(text as string) as unknown
  } catch {
    return undefined
  }
}
