/**
 * The timers of an instance as docs/api.md states them ("Lifecycle rules", "Status", "Phases and reasons"), written
 * as a small model of their own, a few lines per rule, for the property tests that drive the hook through time
 * (test/fuzz/timers.test.ts). It imports nothing from src/: where the model and the hook disagree, one of them is
 * wrong, and docs/api.md says which.
 *
 * One instance alone (the budget never holds it back), with a pod that is Ready or not as the test's world says.
 * Instants are milliseconds since the epoch; the clock of a sync is a whole second.
 */

export const DEFAULT_LIFETIME_SECONDS = 1800
export const DEFAULT_STARTUP_TIMEOUT_SECONDS = 300
export const DEFAULT_MAX_RENEWALS = 2

/** The definition's timers (seconds; instants in ms). */
export interface TimerDefinition {
  lifetimeSeconds?: number
  startupTimeoutSeconds?: number
  maxRenewals?: number
  availableFrom?: number
  availableUntil?: number
}

/** The Challenge's spec as the platform last wrote it. */
export interface TimerSpec {
  lifetimeSeconds?: number
  deadline?: number
  renewals: number
  restarts: number
  stopped: boolean
  stopReason?: string
}

/** What the world shows at a sync: the instance's pod (its run, Ready since when), and since when its traffic path exists. */
export interface TimerFacts {
  pod?: { run: number; readyAt?: number }
  pathSince?: number
}

export type RenewalVerdict = 'Renewed' | 'NotRunning' | 'MaxRenewalsReached' | 'PastDeadline'

export interface Expected {
  phase: 'Pending' | 'Running' | 'Deleted' | 'Error'
  reason: string
  run: number
  admittedAt?: number
  startedAt?: number
  lastRenewedAt?: number
  finishedAt?: number
  expiresAt?: number
  renewalsSeen: number
  renewalsApplied: number
  /** the verdict on a renewal request acted on at this sync */
  renewal?: RenewalVerdict
  /** the instance holds its children (admitted, its run not over) */
  workload: boolean
  /** the earliest instant after this sync at which the answer changes by itself */
  next?: number
}

const earliest = (...instants: (number | undefined)[]): number | undefined => {
  const defined = instants.filter((instant): instant is number => instant !== undefined)
  return defined.length === 0 ? undefined : Math.min(...defined)
}

export class TimerModel {
  run = 0
  ended: { phase: 'Deleted' | 'Error'; reason: string } | undefined
  admittedAt: number | undefined
  startedAt: number | undefined
  lastRenewedAt: number | undefined
  finishedAt: number | undefined
  renewalsSeen = 0
  renewalsApplied = 0

  constructor(
    readonly definition: TimerDefinition,
    /** ENDPOINT_SETTLE_MS */
    readonly settleMs: number,
  ) {}

  sync(now: number, spec: TimerSpec, facts: TimerFacts): Expected {
    const definition = this.definition
    // Runs: `spec.restarts > status.run` starts run `spec.restarts` (not while Stopped); timers and renewals reset.
    if (!spec.stopped && spec.restarts > this.run) {
      if (spec.renewals > this.renewalsSeen)
        throw new Error('the model does not say what a renewal asked with a restart does: generate them apart')
      this.run = spec.restarts
      this.ended = this.admittedAt = this.startedAt = this.lastRenewedAt = this.finishedAt = undefined
      this.renewalsApplied = 0
    }
    // Per-instance lifetime, else the definition's; the hard end is the earliest of spec.deadline and availableUntil.
    const lifetime = (spec.lifetimeSeconds ?? definition.lifetimeSeconds ?? DEFAULT_LIFETIME_SECONDS) * 1000
    const hardEnd = earliest(spec.deadline, definition.availableUntil)
    const expected = this.decide(now, spec, facts, lifetime, hardEnd)
    // Renew: one request however many increments, acted on once: only while Running, below maxRenewals, and when it
    // can still extend the instance before the hard end; lastRenewedAt = now, expiresAt = now + lifetime (capped).
    if (spec.renewals > this.renewalsSeen) {
      this.renewalsSeen = spec.renewals
      const max = definition.maxRenewals ?? DEFAULT_MAX_RENEWALS
      if (expected.phase !== 'Running') expected.renewal = 'NotRunning'
      else if (this.renewalsApplied >= max) expected.renewal = 'MaxRenewalsReached'
      else if (hardEnd !== undefined && (expected.expiresAt as number) >= hardEnd) expected.renewal = 'PastDeadline'
      else {
        expected.renewal = 'Renewed'
        this.lastRenewedAt = now
        this.renewalsApplied += 1
        expected.expiresAt = earliest(now + lifetime, hardEnd)
        expected.next = expected.expiresAt
      }
    }
    return { ...expected, ...this.sticky() }
  }

  private sticky() {
    const { run, admittedAt, startedAt, lastRenewedAt, finishedAt, renewalsSeen, renewalsApplied } = this
    return { run, admittedAt, startedAt, lastRenewedAt, finishedAt, renewalsSeen, renewalsApplied }
  }

  private decide(
    now: number,
    spec: TimerSpec,
    facts: TimerFacts,
    lifetime: number,
    hardEnd: number | undefined,
  ): Expected {
    const base = { ...this.sticky(), workload: false }
    // A finished run stays finished (a stop, a deadline or a lifetime does not change how it ended).
    if (this.ended !== undefined) return { ...base, ...this.ended }
    // Stop: Deleted / Stopped (or the stopReason); the times stay.
    if (spec.stopped) return this.end(now, 'Deleted', spec.stopReason ?? 'Stopped')
    // The deadline and availableUntil cap everything: at or after the hard end, Deleted / PastDeadline.
    if (hardEnd !== undefined && now >= hardEnd) return this.end(now, 'Deleted', 'PastDeadline')
    // Release gate: before availableFrom, Pending / NotYetAvailable, no children, no budget; woken at availableFrom.
    const from = this.definition.availableFrom
    if (from !== undefined && now < from) {
      this.admittedAt = undefined
      return {
        ...base,
        admittedAt: undefined,
        phase: 'Pending',
        reason: 'NotYetAvailable',
        next: earliest(from, hardEnd),
      }
    }
    // Admitted (alone: it always fits its owner's budget), at the first sync that admits it.
    this.admittedAt ??= now
    // Expiry: at now >= max(startedAt, lastRenewedAt) + lifetime, Deleted / Expired.
    if (
      this.startedAt !== undefined &&
      now >= Math.max(this.startedAt, this.lastRenewedAt ?? this.startedAt) + lifetime
    ) {
      return this.end(now, 'Deleted', 'Expired')
    }
    // Running once the pod of this run is Ready, the endpoint exists, and ENDPOINT_SETTLE_MS has passed since the
    // later of the two (a path created after Ready, or created again while Running, counts from its creation).
    const pod = facts.pod?.run === this.run ? facts.pod : undefined
    const reachableAt =
      pod?.readyAt !== undefined && facts.pathSince !== undefined
        ? Math.max(pod.readyAt, facts.pathSince) + this.settleMs
        : Infinity
    const running = reachableAt <= now
    // Startup: still not Running startupTimeoutSeconds after admittedAt (the deadline's own instant included) is an Error.
    const startupDeadline =
      this.startedAt === undefined
        ? this.admittedAt + (this.definition.startupTimeoutSeconds ?? DEFAULT_STARTUP_TIMEOUT_SECONDS) * 1000
        : undefined
    if (startupDeadline !== undefined && now >= startupDeadline && !running)
      return this.end(now, 'Error', 'StartupTimeout')
    if (running) this.startedAt ??= now
    // expiresAt = min(max(startedAt, lastRenewedAt) + lifetime, spec.deadline, availableUntil); before the first
    // Running, the hard end when one is set.
    const expiresAt =
      this.startedAt === undefined
        ? hardEnd
        : earliest(Math.max(this.startedAt, this.lastRenewedAt ?? this.startedAt) + lifetime, hardEnd)
    const ahead = [
      expiresAt,
      hardEnd,
      ...(running ? [] : [reachableAt === Infinity ? undefined : reachableAt, startupDeadline]),
    ].filter((instant) => instant !== undefined && instant > now)
    return {
      ...this.sticky(),
      workload: true,
      phase: running ? 'Running' : 'Pending',
      // Pending: WaitingForEndpoint while the pod is ready and the endpoint is not there yet, else Starting.
      reason: running
        ? 'Ready'
        : pod?.readyAt !== undefined && facts.pathSince === undefined
          ? 'WaitingForEndpoint'
          : 'Starting',
      expiresAt,
      next: earliest(...ahead),
    }
  }

  /** The run ends: the finish time is recorded once, the workload is torn down, nothing expires any more. */
  private end(now: number, phase: 'Deleted' | 'Error', reason: string): Expected {
    this.finishedAt ??= now
    this.ended = { phase, reason }
    return { ...this.sticky(), workload: false, phase, reason }
  }
}

/**
 * resyncAfterSeconds for a next instant (docs/api.md, "Deadlines are scheduled"): rounded up to a tenth of a second
 * so the sync lands at or just after it, at least a tenth, capped at MAX_RESYNC_SECONDS.
 */
export function expectedResync(next: number | undefined, now: number, maxSeconds: number): number | undefined {
  return next === undefined ? undefined : Math.min(maxSeconds, Math.max(1, Math.ceil((next - now) / 100)) / 10)
}
