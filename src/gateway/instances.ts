/**
 * What each call of the API does with the API server: read, create and patch the caller's Challenges, always under
 * the name the gateway derives (./names.ts), and check on every read that the record is the caller's own
 * (`spec.owner`) and of the definition asked for. Nothing here knows HTTP: a refusal is a GatewayError with the
 * status code and the words the answer carries.
 *
 * Reads answer from the namespace's informers (./cache.ts) once they are synced, and ask the API server as before
 * while they are not (starting, the API server out of reach, the watch refused): the same checks and the same answer
 * either way, 503 when neither can be had. Every write hands the API server's answer to the informer, so that the
 * caller's next read shows it before the watch does. An action (renew, restart, stop, delete) is decided on the
 * record as the API server holds it, not as cached: the watch may lag the hook's last status write by a few
 * milliseconds, and a refusal must be true.
 */
import { API_VERSION, Label } from '../contract/api.js'
import type { FlagCheck } from '../challenge/flag-check.js'
import type { GatewayCache } from './cache.js'
import { flagUid } from './flag-client.js'
import { CHALLENGES_API, KubeError, Unavailable, type Json, type Kube } from './kube.js'
import { challengeName, ownerText, sameOwner, type Owner } from './names.js'
import type { EnsureBody } from './schemas.js'
import { instanceView, type ChallengeRecord, type DefinitionFacts, type InstanceView } from './view.js'

export class GatewayError extends Error {
  override readonly name = 'GatewayError'
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

/** Who acts, where: the namespace the caller's platform is scoped to, and the owner its credentials name. */
export interface Scope {
  namespace: string
  owner: Owner
}

export interface InstancesOptions {
  kube: Kube
  /** The namespaces' informers, read when synced. */
  cache: GatewayCache
  ownerBudget: number
  retryAfterSeconds: number
  now: () => Date
  /** The hook server's flag check; undefined: not configured. */
  checkFlag?: (body: Json) => Promise<FlagCheck>
}

export type Action = 'renew' | 'restart' | 'stop'

/** A definition as GET /v1/definitions lists it. */
export interface DefinitionSummary {
  name: string
  flagMode: string
}

/** How many times a patch is tried again when the record changed between the read and the write. */
const PATCH_ATTEMPTS = 3

export function instances({ kube, cache, ownerBudget, retryAfterSeconds, now, checkFlag }: InstancesOptions) {
  const base = (namespace: string) => `${CHALLENGES_API}/namespaces/${namespace}`

  /** A call to the API server, its failures in the API's words. */
  async function api<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      if (error instanceof Unavailable) {
        throw new GatewayError(
          503,
          'The cluster cannot be reached right now; nothing was changed. Try again shortly.',
          {
            'retry-after': String(retryAfterSeconds),
          },
        )
      }
      if (error instanceof KubeError) {
        if (error.statusCode === 403)
          throw new GatewayError(403, `The gateway may not do this in this namespace: ${error.message}`)
        throw new GatewayError(error.statusCode === 422 ? 400 : error.statusCode, error.message)
      }
      throw error
    }
  }

  /** The definition `name`; `fresh`: not cached. */
  async function definitionOf(namespace: string, name: string, fresh = false): Promise<Json | undefined> {
    const cached = fresh ? undefined : cache.definitions(namespace).read(name)
    if (cached !== undefined) return cached.object
    return api(() => kube.get(`${base(namespace)}/challengedefinitions/${name}`))
  }

  const facts = (definition: Json | undefined): DefinitionFacts | undefined =>
    definition?.spec as DefinitionFacts | undefined

  /** The record under the derived name, checked to be the owner's instance of the definition; `fresh`: not cached. */
  async function recordOf(scope: Scope, definition: string, fresh = false): Promise<ChallengeRecord | undefined> {
    const name = challengeName(definition, scope.owner)
    const cached = fresh ? undefined : cache.challenges(scope.namespace).read(name)
    const record = (
      cached === undefined ? await api(() => kube.get(`${base(scope.namespace)}/challenges/${name}`)) : cached.object
    ) as ChallengeRecord | undefined
    if (record === undefined) return undefined
    if (!sameOwner(scope.owner, record.spec?.owner) || record.spec.definitionRef?.name !== definition) {
      throw new GatewayError(
        409,
        `The Challenge ${name} in ${scope.namespace} is not ${ownerText(scope.owner)}'s instance of ${definition} (its spec.owner or definitionRef differs); nothing of it is shown.`,
      )
    }
    return record
  }

  async function required(scope: Scope, definition: string, fresh = false): Promise<ChallengeRecord> {
    const record = await recordOf(scope, definition, fresh)
    if (record === undefined) {
      throw new GatewayError(
        404,
        `${ownerText(scope.owner)} has no instance of ${definition} in ${scope.namespace}; PUT /v1/instances/${definition} starts one.`,
      )
    }
    return record
  }

  /** The owner's Challenges in the namespace: the label selects, spec.owner decides (a Team and a User may share an id). */
  async function siblings(scope: Scope): Promise<ChallengeRecord[]> {
    const items =
      cache
        .challenges(scope.namespace)
        .select((item) => ((item.metadata as Json).labels as Json | undefined)?.[Label.owner] === scope.owner.id) ??
      (
        await api(() =>
          kube.call('GET', `${base(scope.namespace)}/challenges`, {
            query: { labelSelector: `${Label.owner}=${scope.owner.id}` },
          }),
        )
      ).items
    return (items as ChallengeRecord[]).filter((item) => sameOwner(scope.owner, item.spec?.owner))
  }

  /** The API server's answer to the gateway's write, for the next read to show (./cache.ts). */
  const wrote = (namespace: string, answer: Json) => cache.challenges(namespace).wrote(answer)

  async function view(scope: Scope, record: ChallengeRecord, definition?: Json): Promise<InstanceView> {
    const spec = definition ?? (await definitionOf(scope.namespace, record.spec.definitionRef.name))
    return instanceView({
      record,
      definition: facts(spec),
      siblings: await siblings(scope),
      budget: ownerBudget,
      now: now(),
    })
  }

  /** A merge patch of the spec, on the version read (so a concurrent change is seen, and the action decided again). */
  async function patched(
    scope: Scope,
    definition: string,
    action: Action,
    spec: (record: ChallengeRecord) => Json,
  ): Promise<InstanceView> {
    for (let attempt = 1; ; attempt++) {
      const record = await required(scope, definition, true)
      const definitionObject = await definitionOf(scope.namespace, definition)
      const before = await view(scope, record, definitionObject)
      const allowed = before.actions[action]
      if (!allowed.allowed) throw new GatewayError(409, allowed.why)
      try {
        const after = (await api(() =>
          kube.call('PATCH', `${base(scope.namespace)}/challenges/${record.metadata.name}`, {
            body: { metadata: { resourceVersion: record.metadata.resourceVersion }, spec: spec(record) },
            contentType: 'application/merge-patch+json',
          }),
        )) as unknown as ChallengeRecord
        wrote(scope.namespace, after as unknown as Json)
        return await view(scope, after, definitionObject)
      } catch (error) {
        if (!(error instanceof GatewayError && error.statusCode === 409) || attempt >= PATCH_ATTEMPTS) throw error
      }
    }
  }

  const counter = (value: unknown) => (typeof value === 'number' ? value : 0)

  return {
    /** The owner's instance of `definition`: created when there is none (`created`), as it is otherwise. */
    /** `settings` apply only to a Challenge this call creates: a second call changes nothing. */
    async ensure(
      scope: Scope,
      definition: string,
      settings: EnsureBody = {},
    ): Promise<{ created: boolean; view: InstanceView }> {
      const existing = await recordOf(scope, definition)
      if (existing !== undefined) return { created: false, view: await view(scope, existing) }
      const definitionObject = await definitionOf(scope.namespace, definition)
      if (definitionObject === undefined)
        throw new GatewayError(404, `There is no challenge ${definition} in ${scope.namespace}.`)
      const name = challengeName(definition, scope.owner)
      const body = {
        apiVersion: API_VERSION,
        kind: 'Challenge',
        metadata: { name, labels: { [Label.owner]: scope.owner.id, [Label.definition]: definition } },
        spec: {
          definitionRef: { name: definition },
          owner: { kind: scope.owner.kind, id: scope.owner.id },
          ...settings,
        },
      }
      try {
        const created = (await api(() =>
          kube.call('POST', `${base(scope.namespace)}/challenges`, {
            body,
            query: { fieldManager: 'challenge-gateway' },
          }),
        )) as unknown as ChallengeRecord
        wrote(scope.namespace, created as unknown as Json)
        return { created: true, view: await view(scope, created, definitionObject) }
      } catch (error) {
        // Two ensures at once: the other one (maybe another replica) created it, which the cache may not hold yet;
        // this one answers what is there.
        if (!(error instanceof GatewayError && error.statusCode === 409)) throw error
        return { created: false, view: await view(scope, await required(scope, definition, true), definitionObject) }
      }
    },

    /** The definitions of the namespace, for a platform's admin form: each name and its flag mode. */
    async definitions(namespace: string): Promise<DefinitionSummary[]> {
      const items =
        cache.definitions(namespace).select(() => true) ??
        (await api(() => kube.call('GET', `${base(namespace)}/challengedefinitions`))).items
      return (items as Json[])
        .map((item) => {
          // The CRD's schema makes flag.mode one of three strings, PerOwner when absent.
          const flag = (item.spec as { flag?: { mode?: string } } | undefined)?.flag
          return { name: (item.metadata as { name: string }).name, flagMode: flag?.mode ?? 'PerOwner' }
        })
        .sort((a, b) => a.name.localeCompare(b.name))
    },

    async list(scope: Scope): Promise<InstanceView[]> {
      const records = await siblings(scope)
      const definitions = new Map<string, Json | undefined>()
      for (const name of new Set(records.map((record) => record.spec.definitionRef.name)))
        definitions.set(name, await definitionOf(scope.namespace, name))
      return records
        .map((record) =>
          instanceView({
            record,
            definition: facts(definitions.get(record.spec.definitionRef.name)),
            siblings: records,
            budget: ownerBudget,
            now: now(),
          }),
        )
        .sort((a, b) => a.name.localeCompare(b.name))
    },

    async get(scope: Scope, definition: string): Promise<InstanceView> {
      return view(scope, await required(scope, definition))
    },

    /** Renew and restart send the observed counter + 1 (a second click asks for the same value: no double effect). */
    renew: (scope: Scope, definition: string) =>
      patched(scope, definition, 'renew', (record) => ({ renewals: counter(record.status?.renewalsSeen) + 1 })),
    restart: (scope: Scope, definition: string) =>
      patched(scope, definition, 'restart', (record) => ({
        desiredState: 'Running',
        restarts: counter(record.status?.run) + 1,
      })),
    stop: (scope: Scope, definition: string) => patched(scope, definition, 'stop', () => ({ desiredState: 'Stopped' })),

    async remove(scope: Scope, definition: string): Promise<void> {
      const record = await required(scope, definition, true)
      const answer = await api(() =>
        kube.call('DELETE', `${base(scope.namespace)}/challenges/${record.metadata.name}`, {
          body: { preconditions: { uid: record.metadata.uid } },
        }),
      )
      // The object as the delete left it (its deletionTimestamp set while finalizers hold it); a Status when it went
      // at once and the API server does not return deleted objects: then the record as read.
      cache.challenges(scope.namespace).deleted(answer.kind === 'Status' ? (record as unknown as Json) : answer)
    },

    /** The record and its view, for the events stream (which follows the record on ./cache.ts's shared watch). */
    record: required,
    view,

    /**
     * A submitted flag, checked by the hook server against the owner's flag and those of every owner with a
     * Challenge of the definition; a correct one may stop the owner's instance (`stopOnCorrect`).
     */
    async verify(scope: Scope, definition: string, submitted: string, stopOnCorrect: boolean): Promise<FlagCheck> {
      if (checkFlag === undefined)
        throw new GatewayError(404, 'Flag checks are not configured on this gateway (FLAG_VERIFY_URL).')
      // Straight from the API server, as the Challenges below: a flag check is rare, and whose flag it is and how it
      // is made must not depend on a watch's lag.
      const definitionObject = await definitionOf(scope.namespace, definition, true)
      if (definitionObject === undefined)
        throw new GatewayError(404, `There is no challenge ${definition} in ${scope.namespace}.`)
      const flag = ((definitionObject.spec as Json | undefined)?.flag ?? {}) as Json
      const mode = typeof flag.mode === 'string' ? flag.mode : 'PerOwner'
      if (mode === 'Static') {
        throw new GatewayError(
          409,
          `The flag of ${definition} is Static: the author's Secret, which the gateway may not read. Check it in the platform.`,
        )
      }
      const list = await api(() =>
        kube.call('GET', `${base(scope.namespace)}/challenges`, {
          query: { labelSelector: `${Label.definition}=${definition}` },
        }),
      )
      const records = (list.items as ChallengeRecord[]).filter(
        (record) => record.spec?.definitionRef?.name === definition,
      )
      const own = records.find((record) => record.metadata.name === challengeName(definition, scope.owner))
      const owner = (record: ChallengeRecord | undefined, who: Owner) => {
        const uid = flagUid(record)
        return { kind: who.kind, id: who.id, ...(uid === undefined ? {} : { uid }) }
      }
      const answer = await api(() =>
        checkFlag({
          namespace: scope.namespace,
          definition,
          flag: { mode, prefix: flag.prefix ?? 'flag{', suffix: flag.suffix ?? '}' },
          owner: owner(sameOwner(scope.owner, own?.spec.owner) ? own : undefined, scope.owner),
          candidates: records.map((record) => owner(record, record.spec.owner)),
          submitted,
        }),
      )
      if (answer.result === 'correct' && stopOnCorrect && own !== undefined && own.spec.desiredState !== 'Stopped') {
        wrote(
          scope.namespace,
          await api(() =>
            kube.call('PATCH', `${base(scope.namespace)}/challenges/${own.metadata.name}`, {
              body: { spec: { desiredState: 'Stopped', stopReason: 'Solved' } },
              contentType: 'application/merge-patch+json',
            }),
          ),
        )
      }
      return answer
    },
  }
}

export type Instances = ReturnType<typeof instances>
