/**
 * Prometheus metrics, one registry per app (tests build many apps; nothing is global).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { ImagesReport } from '../challenge/images.js'
import { createInstanceMetrics, type InstanceMetrics } from './instance-metrics.js'

// The label of a stop reason lives in ./reason-label.ts, which both this file and ./instance-metrics.ts read: the
// instance metrics are built here, so they cannot import from here.
export { reasonLabel } from './reason-label.js'

export interface HookMetrics {
  registry: Registry
  hookDuration: Histogram<'hook' | 'code'>
  requestSize: Histogram<'hook'>
  answers: Counter<'hook' | 'phase' | 'reason'>
  rejected: Counter<'cause'>
  inFlight: Gauge
  /** What the answers say about the instances (instance-metrics.ts). */
  instances: InstanceMetrics
  /** The warm pools' pods, by state, as each definition's last pool sync counted them. */
  poolPods: Gauge<'namespace' | 'definition' | 'state'>
  /** Claims the pool syncs answered (a claim lands once Metacontroller's write of it does). */
  poolClaims: Counter<'namespace' | 'definition'>
  /** The pre-pulled images' nodes, by image and state, as each definition's last pool sync counted them. */
  prepullNodes: Gauge<'namespace' | 'definition' | 'image' | 'state'>
  /** When a definition that pre-pulls opens (availableFrom; 0 when it is open from the start), for the alert. */
  prepullOpens: Gauge<'namespace' | 'definition'>
  /** The images each definition's series name now, so that a removed image or definition loses its series. */
  prepullImages: Map<string, readonly string[]>
}

export function createMetrics(clock: () => Date = () => new Date()): HookMetrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  return {
    registry,
    hookDuration: new Histogram({
      name: 'challenge_hooks_hook_duration_seconds',
      help: 'Time to answer a hook call, by hook and HTTP status code.',
      labelNames: ['hook', 'code'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    requestSize: new Histogram({
      name: 'challenge_hooks_request_size_bytes',
      help: 'Size of hook request bodies.',
      labelNames: ['hook'],
      buckets: [1e3, 1e4, 5e4, 1e5, 2.5e5, 5e5, 1e6, 2.5e6, 5e6, 1e7],
      registers: [registry],
    }),
    answers: new Counter({
      name: 'challenge_hooks_answers_total',
      help: 'Hook answers by the phase and reason decided (custom stop reasons count as "Custom").',
      labelNames: ['hook', 'phase', 'reason'],
      registers: [registry],
    }),
    rejected: new Counter({
      name: 'challenge_hooks_rejected_total',
      help: 'Hook calls refused before reaching the domain, by cause (unauthorized, overloaded, eventLoopDelay, timeout).',
      labelNames: ['cause'],
      registers: [registry],
    }),
    inFlight: new Gauge({
      name: 'challenge_hooks_in_flight_requests',
      help: 'Hook calls being answered now.',
      registers: [registry],
    }),
    instances: createInstanceMetrics(registry, clock),
    poolPods: new Gauge({
      name: 'challenge_hooks_pool_pods',
      help: "A warm pool's pods by state (free, claimed, starting), as its definition's last pool sync counted them.",
      labelNames: ['namespace', 'definition', 'state'],
      registers: [registry],
    }),
    poolClaims: new Counter({
      name: 'challenge_hooks_pool_claims_total',
      help: 'Claims of pooled pods the pool syncs answered.',
      labelNames: ['namespace', 'definition'],
      registers: [registry],
    }),
    prepullNodes: new Gauge({
      name: 'challenge_hooks_prepull_nodes',
      help: "A definition's pre-pulled images: the nodes that should hold each (desired), hold it (ready) or cannot pull it (failed), as its last pool sync counted them.",
      labelNames: ['namespace', 'definition', 'image', 'state'],
      registers: [registry],
    }),
    prepullOpens: new Gauge({
      name: 'challenge_hooks_prepull_opens_timestamp_seconds',
      help: 'When a definition that pre-pulls its images opens (its availableFrom; 0 when it has none).',
      labelNames: ['namespace', 'definition'],
      registers: [registry],
    }),
    prepullImages: new Map(),
  }
}

export const PREPULL_NODE_STATES = ['desired', 'ready', 'failed'] as const

/**
 * One pool sync's pre-pull report (none: the definition pulls nothing ahead, or is closed or gone, and loses its
 * series).
 */
export function recordImages(
  metrics: HookMetrics,
  definition: { namespace: string; definition: string },
  images: { report: ImagesReport; opensAt: number | undefined } | undefined,
): void {
  const key = `${definition.namespace}/${definition.definition}`
  const kept = new Set(images?.report.images.map((image) => image.image) ?? [])
  for (const image of metrics.prepullImages.get(key) ?? []) {
    if (kept.has(image)) continue
    for (const state of PREPULL_NODE_STATES) metrics.prepullNodes.remove({ ...definition, image, state })
  }
  if (images === undefined) {
    metrics.prepullImages.delete(key)
    metrics.prepullOpens.remove(definition)
    return
  }
  metrics.prepullImages.set(key, [...kept])
  for (const image of images.report.images) {
    metrics.prepullNodes.set({ ...definition, image: image.image, state: 'desired' }, image.desired)
    metrics.prepullNodes.set({ ...definition, image: image.image, state: 'ready' }, image.ready)
    metrics.prepullNodes.set({ ...definition, image: image.image, state: 'failed' }, image.failed)
  }
  metrics.prepullOpens.set(definition, (images.opensAt ?? 0) / 1000)
}

export const POOL_POD_STATES = ['free', 'claimed', 'starting'] as const

/**
 * One pool sync's counts. A definition that holds no pool pod (none asked for, or all gone) has no series: the
 * gauge's series stay those of the pools that exist.
 */
export function recordPool(
  metrics: HookMetrics,
  definition: { namespace: string; definition: string },
  counts: Record<(typeof POOL_POD_STATES)[number], number>,
  claims: number,
): void {
  const empty = POOL_POD_STATES.every((state) => counts[state] === 0)
  for (const state of POOL_POD_STATES) {
    if (empty) metrics.poolPods.remove({ ...definition, state })
    else metrics.poolPods.set({ ...definition, state }, counts[state])
  }
  if (claims > 0) metrics.poolClaims.inc(definition, claims)
}

/**
 * The registry's text, rendered once for every caller that asks while a rendering is under way: a burst of scrapes
 * (or of pipelined requests, which arrive in one read) costs one rendering, and every answer is current.
 */
export function renderMetrics(registry: Registry): () => Promise<string> {
  let rendering: Promise<string> | undefined
  return () => {
    rendering ??= registry.metrics().finally(() => {
      rendering = undefined
    })
    return rendering
  }
}
