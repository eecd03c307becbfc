/**
 * The gateway's calls to the API server: raw JSON over HTTP(S), with @kubernetes/client-node's KubeConfig for the
 * server, its CA and the credentials (in a pod, the ServiceAccount's token, re-read as it rotates). Raw JSON because
 * the gateway hands status fields on as the hook wrote them; the typed clients would turn times into Dates.
 *
 * What cannot be had now (no connection, a timeout, 429, a 5xx) is Unavailable, which the routes answer 503 with
 * Retry-After: the call changed nothing the caller cannot repeat. Every other refusal is a KubeError with the API
 * server's status code, reason and message.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from 'node:https'
import type { KubeConfig } from '@kubernetes/client-node'

export type Json = Record<string, unknown>

export class Unavailable extends Error {
  override readonly name = 'Unavailable'
}

export class KubeError extends Error {
  override readonly name = 'KubeError'
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message)
  }
}

export interface CallOptions {
  query?: Record<string, string | number | boolean>
  body?: unknown
  contentType?: string
}

export interface WatchEvent {
  type: string
  object: Json
}

export interface Kube {
  /** The object; undefined for a 404. */
  get(path: string): Promise<Json | undefined>
  call(method: string, path: string, options?: CallOptions): Promise<Json>
  /** Streams a watch's events until it ends (the API server's timeout), `signal` aborts, or it fails. */
  watch(
    path: string,
    query: CallOptions['query'],
    onEvent: (event: WatchEvent) => void,
    signal: AbortSignal,
  ): Promise<void>
}

export const CHALLENGES_API = '/apis/challenge-hooks.dev/v1alpha1'

function parse(text: string): Json | undefined {
  try {
    return JSON.parse(text) as Json
  } catch {
    return undefined
  }
}

/** A non-2xx answer as an error: Unavailable for what may pass, KubeError with the Status otherwise. */
function failure(status: number, text: string): Error {
  // A Status object, or a proxy's page in front of the API server.
  const said = parse(text)?.message
  const message = typeof said === 'string' ? said : `HTTP ${status}`
  if (status === 429 || status >= 500) return new Unavailable(`the API server answered ${status}: ${message}`)
  return new KubeError(status, message)
}

/**
 * KubeConfig hands out a plain Agent without keep-alive (one per cluster and user, kept for the process's life), so
 * every call would open a connection of its own: under load a TLS handshake per call, which cost the gateway more
 * than the API server's answers did (bench/RESULTS.md, the gateway). The same TLS settings on a keep-alive Agent,
 * made once for each of KubeConfig's; a proxy's Agent is left as it is.
 */
const keptAlive = new WeakMap<object, HttpAgent>()
function keepAlive(options: RequestOptions): RequestOptions['agent'] {
  const given = options.agent as HttpAgent
  if (given.constructor !== HttpsAgent && given.constructor !== HttpAgent) return given
  let agent = keptAlive.get(given)
  if (agent === undefined) {
    const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } = options
    agent =
      given instanceof HttpsAgent
        ? new HttpsAgent({ keepAlive: true, ca, cert, key, pfx, passphrase, rejectUnauthorized, servername })
        : new HttpAgent({ keepAlive: true })
    keptAlive.set(given, agent)
  }
  return agent
}

export function kubeClient(kubeconfig: KubeConfig, timeoutMs: number): Kube {
  const cluster = kubeconfig.getCurrentCluster()
  if (cluster === null) throw new Error('the kubeconfig has no current cluster')
  const server = new URL(cluster.server)

  async function open(
    method: string,
    path: string,
    options: CallOptions,
    signal?: AbortSignal,
  ): Promise<IncomingMessage> {
    const url = new URL(path, server)
    for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, String(value))
    const body = options.body === undefined ? undefined : JSON.stringify(options.body)
    const requestOptions: RequestOptions = {
      method,
      headers: {
        accept: 'application/json',
        ...(body === undefined
          ? {}
          : { 'content-type': options.contentType ?? 'application/json', 'content-length': Buffer.byteLength(body) }),
      },
    }
    await kubeconfig.applyToHTTPSOptions(requestOptions)
    requestOptions.agent = keepAlive(requestOptions)
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest
    return new Promise((resolve, reject) => {
      const request = send(url, { ...requestOptions, signal }, resolve)
      // A watch may stay silent for minutes: only the wait for the answer's head is bounded.
      const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
      request.on('response', () => clearTimeout(timer))
      request.on('error', (error) => {
        clearTimeout(timer)
        // An aborted watch too: the stream that aborted it is closing and reads nothing more.
        reject(new Unavailable(`the API server cannot be reached: ${error.message}`))
      })
      request.end(body)
    })
  }

  async function readAll(response: IncomingMessage): Promise<string> {
    let text = ''
    response.setEncoding('utf8')
    for await (const chunk of response) text += chunk as string
    return text
  }

  const kube: Kube = {
    async get(path) {
      try {
        return await kube.call('GET', path)
      } catch (error) {
        if (error instanceof KubeError && error.statusCode === 404) return undefined
        throw error
      }
    },
    async call(method, path, options = {}) {
      const response = await open(method, path, options)
      const text = await readAll(response).catch((error: Error) => {
        throw new Unavailable(`the API server's answer was cut: ${error.message}`)
      })
      const status = response.statusCode as number
      if (status < 200 || status > 299) throw failure(status, text)
      return parse(text) as Json
    },
    async watch(path, query, onEvent, signal) {
      const response = await open('GET', path, { query: { ...query, watch: 'true' } }, signal)
      const status = response.statusCode as number
      if (status !== 200) throw failure(status, await readAll(response))
      let buffered = ''
      response.setEncoding('utf8')
      try {
        for await (const chunk of response) {
          buffered += chunk as string
          let newline = buffered.indexOf('\n')
          while (newline >= 0) {
            const event = parse(buffered.slice(0, newline))
            buffered = buffered.slice(newline + 1)
            if (event !== undefined) onEvent(event as unknown as WatchEvent)
            newline = buffered.indexOf('\n')
          }
        }
      } catch (error) {
        if (!signal.aborted) throw new Unavailable(`the watch was cut: ${(error as Error).message}`)
      }
    },
  }
  return kube
}
