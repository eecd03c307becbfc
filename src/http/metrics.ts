/**
 * Prometheus metrics, one registry per app (tests build many apps; nothing is global).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
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
  }
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
