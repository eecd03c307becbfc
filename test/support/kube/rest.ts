// Raw JSON requests to a Kubernetes API server, with @kubernetes/client-node's KubeConfig for the server,
// TLS and credentials. Not client-node's typed APIs: their deserialisation turns timestamps into Date objects and
// drops fields its models do not know, and the Metacontroller stand-in must hand the hooks exactly what the API
// server sent, as Metacontroller's unstructured client does.
import { request as httpRequest } from 'node:http'
import { request as httpsRequest, type RequestOptions as HttpsRequestOptions } from 'node:https'
import { KubeConfig } from '@kubernetes/client-node'
import { ApiError, type ApiErrorReason } from '../simulator/admission.js'
import type { ResourceType } from '../simulator/objects.js'

export type Json = Record<string, unknown>

export interface RequestOptionsJson {
  body?: unknown
  /** default application/json; merge patches: application/merge-patch+json */
  contentType?: string
  query?: Record<string, string | number | boolean | undefined>
  timeoutMs?: number
  /** Impersonate this user (and groups), as `kubectl --as --as-group` does: the admin may. */
  as?: { user: string; groups?: string[] }
  /** default application/json */
  accept?: string
  /** answer the body as text, unparsed */
  raw?: boolean
}

/** client-go's maxRetries for answers with Retry-After */
const MAX_RETRIES = 10
const KNOWN_REASONS = new Set<string>(['NotFound', 'AlreadyExists', 'Conflict', 'Invalid', 'Forbidden', 'BadRequest'])

export class Rest {
  readonly kubeconfig: KubeConfig
  readonly server: URL
  /** Warnings the API server attached to answers (`Warning:` headers: Pod Security, deprecations), in order. */
  readonly warnings: Array<{ method: string; path: string; warning: string }> = []

  constructor(kubeconfig: KubeConfig) {
    const cluster = kubeconfig.getCurrentCluster()
    if (cluster === null) throw new Error('the kubeconfig has no current cluster')
    this.kubeconfig = kubeconfig
    this.server = new URL(cluster.server)
  }

  static fromFile(path: string): Rest {
    const kubeconfig = new KubeConfig()
    kubeconfig.loadFromFile(path)
    return new Rest(kubeconfig)
  }

  async get<T = Json>(path: string, options: RequestOptionsJson = {}): Promise<T> {
    return (await this.call('GET', path, options)) as T
  }

  /** The body of a GET as text, for what is not JSON (the API server's `/metrics` is Prometheus text: parsed as JSON, it was nothing). */
  async text(path: string, options: RequestOptionsJson = {}): Promise<string> {
    return (await this.call('GET', path, { accept: 'text/plain', ...options, raw: true })) as string
  }

  /** undefined for a 404 */
  async find<T = Json>(path: string): Promise<T | undefined> {
    try {
      return await this.get<T>(path)
    } catch (error) {
      if (error instanceof ApiError && error.reason === 'NotFound') return undefined
      throw error
    }
  }

  /**
   * Sends a request; a non-2xx answer throws ApiError with the Status's reason and message. An answer that carries
   * Retry-After (429 "storage is (re)initializing" while a CRD's watch cache starts, or overload) is retried after
   * that delay, up to MAX_RETRIES times, as client-go does.
   */
  async call(method: string, path: string, options: RequestOptionsJson = {}): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      const answer = await this.#send(method, path, options)
      if (answer.retryAfterSeconds === undefined || attempt > MAX_RETRIES) return answer.result()
      await new Promise((resolve) => setTimeout(resolve, Math.min(answer.retryAfterSeconds as number, 10) * 1000))
    }
  }

  async #send(
    method: string,
    path: string,
    options: RequestOptionsJson,
  ): Promise<{ retryAfterSeconds: number | undefined; result: () => unknown }> {
    const url = new URL(path, this.server)
    for (const [key, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) url.searchParams.set(key, String(value))
    const body = options.body === undefined ? undefined : JSON.stringify(options.body)
    const requestOptions: HttpsRequestOptions = {
      method,
      headers: {
        accept: options.accept ?? 'application/json',
        // An explicit length: Node sends no chunked body for DELETE, so without it DeleteOptions would be dropped.
        ...(body === undefined
          ? {}
          : { 'content-type': options.contentType ?? 'application/json', 'content-length': Buffer.byteLength(body) }),
        ...(options.as === undefined
          ? {}
          : { 'impersonate-user': options.as.user, 'impersonate-group': options.as.groups ?? [] }),
      },
    }
    await this.kubeconfig.applyToHTTPSOptions(requestOptions)
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest
    const { status, text, retryAfter, warning } = await new Promise<{
      status: number
      text: string
      retryAfter: string | undefined
      warning: string | undefined
    }>((resolve, reject) => {
      const req = send(url, { ...requestOptions, timeout: options.timeoutMs ?? 30_000 }, (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (text += chunk))
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            text,
            retryAfter: res.headers['retry-after'],
            warning: res.headers.warning,
          }),
        )
        res.on('error', reject)
      })
      req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname}: timed out`)))
      req.on('error', reject)
      req.end(body)
    })
    // RFC 7234 warnings: `299 - "text"`, several joined by commas.
    for (const match of (warning ?? '').matchAll(/299 \S+ "((?:[^"\\]|\\.)*)"/g))
      this.warnings.push({ method, path: url.pathname, warning: (match[1] as string).replace(/\\(.)/g, '$1') })
    const parsed = parse(text)
    if (status >= 200 && status < 300)
      return { retryAfterSeconds: undefined, result: () => (options.raw === true ? text : parsed) }
    const statusObject = (parsed ?? {}) as { reason?: string; message?: string }
    const reason = KNOWN_REASONS.has(statusObject.reason ?? '') ? (statusObject.reason as ApiErrorReason) : 'Unknown'
    const error = new ApiError(
      reason,
      statusObject.message ?? `${method} ${url.pathname}: HTTP ${status}: ${text.slice(0, 300)}`,
      status,
    )
    const retryAfterSeconds = retryAfter !== undefined && /^\d+$/.test(retryAfter) ? Number(retryAfter) : undefined
    return {
      retryAfterSeconds,
      result: () => {
        throw error
      },
    }
  }
}

/** `/api/v1/namespaces/<ns>/pods/<name>/status` and the like. */
export function resourcePath(resource: ResourceType, namespace?: string, name?: string, subresource?: string): string {
  const base = resource.apiVersion.includes('/') ? `/apis/${resource.apiVersion}` : `/api/${resource.apiVersion}`
  return [base, namespace === undefined ? undefined : `namespaces/${namespace}`, resource.resource, name, subresource]
    .filter((part) => part !== undefined)
    .join('/')
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}
