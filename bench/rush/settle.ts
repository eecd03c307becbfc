// When a rush has settled: from when on the hook calls were no more than the instances' own resyncs ask for.
//
// Each answer asks for a resync within the hook's MAX_RESYNC_SECONDS, so a window of exactly that length holds one
// resync per instance however bunched they are (an opening starts its instances together, and their resyncs come
// back together a resync period later). A window shorter than the period read such a wave as a backlog, and a
// settle time taken at the window's end could never come sooner than a window after the last Running.

/** The hook calls counted so far, at one moment (ms). */
export interface CallSample {
  time: number
  calls: number
}

export interface SettleRule {
  /** at most `rate` x the instances' resyncs over the window */
  rate: number
  windowSeconds: number
  /** settled from the window's start; runs recorded before this field, at its end */
  from?: 'start'
}

/** The most calls a settled window holds: `rate` x one resync per instance per `resyncSeconds`. */
export function settleLimit(rule: SettleRule, instances: number, resyncSeconds: number): number {
  return Math.ceil((rule.rate * instances * rule.windowSeconds) / resyncSeconds)
}

/**
 * The start of the window that ends at the last sample, when that window is whole (within `slackMs`, the sampling
 * period) and holds at most `limit` calls: the moment from which the rush had settled. Undefined otherwise.
 */
export function settledSince(
  samples: readonly CallSample[],
  windowSeconds: number,
  limit: number,
  slackMs: number,
): number | undefined {
  const now = samples.at(-1)
  if (now === undefined) return undefined
  const start = samples.find((sample) => sample.time >= now.time - windowSeconds * 1000) as CallSample
  const whole = now.time - start.time >= windowSeconds * 1000 - slackMs
  return whole && now.calls - start.calls <= limit ? start.time : undefined
}
