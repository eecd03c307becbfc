/**
 * What an answer of the gateway tells a player about an instance, from the Challenge the API server holds, its
 * definition and the owner's other Challenges: phase, reason and message, the endpoint and the command to paste, the
 * expiry, for each action whether it is allowed now and why not, the owner's budget and the queue position. A plain
 * function of its inputs (the clock is one): the routes refuse an action for the reason this view gives.
 */
import { Defaults, Phase, Reason } from '../contract/api.js'
import type { Owner } from './names.js'

/** A Challenge as the API server answers it; the status is read as untrusted (an old hook may have written it). */
export interface ChallengeRecord {
  metadata: {
    name: string
    namespace: string
    uid?: string
    resourceVersion: string
    creationTimestamp: string
    deletionTimestamp?: string
    labels?: Record<string, string>
  }
  spec: {
    definitionRef: { name: string }
    owner: Owner
    desiredState?: string
    renewals?: number
    restarts?: number
    deadline?: string
  }
  status?: Record<string, unknown>
}

/** What the view needs of the ChallengeDefinition's spec; undefined when it is gone. */
export interface DefinitionFacts {
  maxRenewals?: number
  availableFrom?: string
  availableUntil?: string
}

export type Action = { allowed: true } | { allowed: false; why: string }

export interface InstanceView {
  name: string
  namespace: string
  definition: string
  owner: Owner
  /** `None` before the hook wrote a status. */
  phase: string
  reason?: string
  message?: string
  endpoint?: { type: string; host: string; port: number; url?: string }
  /** What a player pastes: the URL, `ncat --ssl host port` or `nc host port`. */
  command?: string
  expiresAt?: string
  renewals: { applied: number; max: number }
  actions: { renew: Action; restart: Action; stop: Action }
  budget: { held: number; total: number }
  /** 1 for the next to start, among the owner's queued instances of the namespace; only while Queued. */
  queuePosition?: number
  /** The steps of a start (the status's progress conditions), in order, each done or not; only while admitted and Pending. */
  steps?: { step: StartStep; done: boolean }[]
  /** The object's resourceVersion: the id of the events stream's event. */
  version?: string
}

/** The progress conditions of a start, in the order a start goes through them (docs/api.md, Conditions). */
export const START_STEPS = ['Admitted', 'Scheduled', 'ContainersStarted', 'WorkloadReady', 'EndpointReady'] as const
export type StartStep = (typeof START_STEPS)[number]

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined)
const count = (value: unknown): number => (typeof value === 'number' && Number.isInteger(value) ? value : 0)

/** A date-time as the API server stores it, at whole seconds in UTC; undefined when it cannot be read. */
function instant(value: unknown): Date | undefined {
  const date = typeof value === 'string' ? new Date(value) : undefined
  return date === undefined || Number.isNaN(date.getTime()) ? undefined : date
}
const shown = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, 'Z')

/** The earlier of the Challenge's deadline and the definition's availableUntil, with words for it. */
function hardEnd(record: ChallengeRecord, definition: DefinitionFacts | undefined) {
  const ends = [
    { at: instant(definition?.availableUntil), future: 'the challenge closes', past: 'the challenge closed' },
    { at: instant(record.spec.deadline), future: 'the event ends', past: 'the event ended' },
  ].filter((end): end is { at: Date; future: string; past: string } => end.at !== undefined)
  return ends.sort((a, b) => a.at.getTime() - b.at.getTime())[0]
}

function holds(status: Record<string, unknown> | undefined, type: string): boolean {
  const conditions = Array.isArray(status?.conditions) ? (status.conditions as Record<string, unknown>[]) : []
  return conditions.some((condition) => condition.type === type && condition.status === 'True')
}
const admitted = (status: Record<string, unknown> | undefined) => holds(status, 'Admitted')

/** While an admitted instance starts, which of its steps are done: what the player page shows step by step. */
function startSteps(status: Record<string, unknown> | undefined) {
  if (text(status?.phase) !== Phase.Pending || !admitted(status)) return undefined
  return START_STEPS.map((step) => ({ step, done: holds(status, step) }))
}

const deny = (why: string): Action => ({ allowed: false, why })
const ALLOWED: Action = { allowed: true }

function actions(record: ChallengeRecord, definition: DefinitionFacts | undefined, now: Date) {
  const status = record.status
  const phase = text(status?.phase)
  const maxRenewals = definition?.maxRenewals ?? Defaults.maxRenewals
  const end = hardEnd(record, definition)
  const removing = record.metadata.deletionTimestamp !== undefined ? deny('The instance is being removed.') : undefined

  const renew = (): Action => {
    if (phase !== Phase.Running)
      return deny(`Only a running instance can be renewed; this one is ${phase ?? 'not started yet'}.`)
    if (count(record.spec.renewals) > count(status?.renewalsSeen)) return deny('A renewal is already being applied.')
    if (count(status?.renewalsApplied) >= maxRenewals) return deny(`All ${maxRenewals} renewals are used.`)
    const expires = instant(status?.expiresAt)
    if (end !== undefined && expires !== undefined && expires.getTime() >= end.at.getTime()) {
      return deny(`${capitalised(end.future)} at ${shown(end.at)}: a renewal cannot extend the instance.`)
    }
    return ALLOWED
  }
  const restart = (): Action => {
    if (status === undefined) return deny('The instance has not been seen by the controller yet.')
    if (count(record.spec.restarts) > count(status.run)) return deny('A restart is already under way.')
    if (end !== undefined && end.at.getTime() <= now.getTime())
      return deny(`${capitalised(end.past)} at ${shown(end.at)}.`)
    const from = instant(definition?.availableFrom)
    if (from !== undefined && from.getTime() > now.getTime()) return deny(`The challenge opens at ${shown(from)}.`)
    return ALLOWED
  }
  const stop = (): Action => {
    if (record.spec.desiredState === 'Stopped') return deny('The instance is already stopped.')
    if (phase === Phase.Deleted || phase === Phase.Error) return deny(`The instance has ended (${phase}).`)
    return ALLOWED
  }
  return { renew: removing ?? renew(), restart: removing ?? restart(), stop: removing ?? stop() }
}

const capitalised = (words: string) => words.charAt(0).toUpperCase() + words.slice(1)

/** The owner's queued instances in the order the hook admits them (creation, then name), and this one's place. */
function queuePosition(record: ChallengeRecord, siblings: readonly ChallengeRecord[]): number | undefined {
  if (text(record.status?.reason) !== Reason.Queued) return undefined
  // RFC 3339 times at whole seconds in UTC sort as text; a space sorts before any character of a name.
  const order = (each: ChallengeRecord) => `${each.metadata.creationTimestamp} ${each.metadata.name}`
  const queued = siblings.filter((sibling) => text(sibling.status?.reason) === Reason.Queued).map(order)
  return queued.sort().indexOf(order(record)) + 1
}

export interface ViewInput {
  record: ChallengeRecord
  definition: DefinitionFacts | undefined
  /** The owner's Challenges in the namespace (this one among them). */
  siblings: readonly ChallengeRecord[]
  /** OWNER_BUDGET, as the hook server has it. */
  budget: number
  now: Date
}

export function instanceView({ record, definition, siblings, budget, now }: ViewInput): InstanceView {
  const status = record.status
  const endpoint = status?.endpoint as Record<string, unknown> | undefined
  const held = siblings
    .filter((sibling) => sibling.metadata.deletionTimestamp === undefined && admitted(sibling.status))
    .reduce((sum, sibling) => sum + (typeof sibling.status?.cost === 'number' ? sibling.status.cost : Defaults.cost), 0)
  const optional = {
    reason: text(status?.reason),
    message: text(status?.message),
    endpoint:
      endpoint === undefined
        ? undefined
        : {
            type: String(endpoint.type),
            host: String(endpoint.host),
            port: count(endpoint.port),
            ...(typeof endpoint.url === 'string' ? { url: endpoint.url } : {}),
          },
    command: text(endpoint?.connection),
    expiresAt: text(status?.expiresAt),
    queuePosition: queuePosition(record, siblings),
    steps: startSteps(status),
    version: record.metadata.resourceVersion,
  }
  return {
    name: record.metadata.name,
    namespace: record.metadata.namespace,
    definition: record.spec.definitionRef.name,
    owner: { kind: record.spec.owner.kind, id: record.spec.owner.id },
    phase: text(status?.phase) ?? 'None',
    ...(Object.fromEntries(
      Object.entries(optional).filter(([, value]) => value !== undefined),
    ) as Partial<InstanceView>),
    renewals: { applied: count(status?.renewalsApplied), max: definition?.maxRenewals ?? Defaults.maxRenewals },
    actions: actions(record, definition, now),
    budget: { held, total: budget },
  }
}
