/**
 * The warm pool's hooks (CompositeController `challenge-hooks-pools`, parent ChallengeDefinition) as pure functions
 * of (request, config, now):
 *
 *   request ─► resolve the definition ─► read the pool (pool-view.ts) ─► plan (pool-claims.ts)
 *           ─► children (pool-children.ts) ─► status (pool-status.ts)
 *           ─► with prepull, the DaemonSet and status.images (images.ts)
 *
 * Every pool pod runs only on children that are the definition's own, as a cold instance's does: the shared
 * policies, and its flag Secret holding its flag. A PerInstance flag is made from that Secret's uid, which the API
 * server picks at random and never gives twice, so the Secret is answered empty first and filled once its uid is
 * observed; only then is the pod answered, which reads its flag at its start.
 */
import type { Config } from '../config/config.js'
import type {
  CustomizeResponse,
  DesiredChild,
  KubeObject,
  PoolCustomizeRequest,
  PoolSyncRequest,
  RelatedResourceRule,
  SyncResponse,
} from '../contract/protocol.js'
import { Annotation, Label, PoolState, PrepullMode } from '../contract/api.js'
import { NON_EMPTY_LABEL_VALUE } from '../contract/patterns.js'
import { FLAG_KEY } from './children.js'
import { definitionPolicy, resolveDefinition, type ResolvedDefinition } from './definition.js'
import { flagData, staticFlagSecrets } from './flag.js'
import { imagesDaemonSet, imagesReport, imagesStatus, type ImagesReport } from './images.js'
import { resyncAfter } from './hooks.js'
import { FLAG_SECRET_SUFFIX } from './names.js'
import {
  findObject,
  indexObjects,
  isBeingDeleted,
  isOwnedBy,
  objectsOfKind,
  ownChild,
  type ObservedIndex,
} from './observed.js'
import { planPool, type PlannedPod, type PoolPod } from './pool-claims.js'
import {
  poolFlagSecret,
  poolFlagSecretName,
  poolInternetPolicy,
  poolIsolatePolicy,
  poolNames,
  poolPod,
  poolRendering,
  withClaim,
  type PoolNames,
} from './pool-children.js'
import { NO_PODS, openState, poolStatus, type PoolCounts } from './pool-status.js'
import { poolChallenges, poolPods, poolTickets } from './pool-view.js'
import { retain } from './teardown.js'
import { toSeconds } from './time.js'
import { field, text } from './untrusted.js'
import { podEnded, podProblem } from './workload.js'

/**
 * The Services that carry a ticket for the definition's pool (docs/api.md#warm-pools), not its Challenges: each
 * status write of a Challenge would sync the pool, and each pool sync would carry them all. For a Static flag, the
 * Secrets labelled with the definition that are not the hook's own (as a Challenge's customize relates them); unless
 * its prepull is Off, its DaemonSet's pods. A definition without a pool relates no ticket: Metacontroller asks again
 * when its spec changes (it keeps a customize answer per generation).
 */
export function poolCustomize(request: PoolCustomizeRequest): CustomizeResponse {
  const definition = request.parent
  const { name, namespace } = definition.metadata
  const spec = definition.spec
  const rules: RelatedResourceRule[] = []
  const size = field(field(spec, 'pool'), 'size')
  if (typeof size === 'number' && size > 0) {
    rules.push({
      apiVersion: 'v1',
      resource: 'services',
      namespace,
      labelSelector: { matchLabels: { [Label.poolTicket]: name } },
    })
    if (field(field(spec, 'flag'), 'mode') === 'Static') rules.push(staticFlagSecrets(namespace, name))
  }
  // The pods of its pre-pull DaemonSet (images.ts), which are the DaemonSet's children, not the definition's. Also
  // for a definition that leaves prepull to PREPULL_DEFAULT, whatever it is now: Metacontroller keeps a customize
  // answer per generation, so a changed default would otherwise reach the definition only at its next change.
  if (field(spec, 'prepull') !== PrepullMode.Off) {
    rules.push({
      apiVersion: 'v1',
      resource: 'pods',
      namespace,
      labelSelector: { matchLabels: { [Label.prepull]: name } },
    })
  }
  return { relatedResources: rules }
}

/** A pool sync's answer, with what the metrics say of it: the live counts and the claims it makes. */
export interface PoolAnswer {
  response: SyncResponse
  state: PoolState
  counts: PoolCounts
  claims: number
  /** The pre-pull's report, while the definition asks for one; with when it opens (ms), for the alert. */
  images?: { report: ImagesReport; opensAt: number | undefined }
}

export function poolSync(request: PoolSyncRequest, config: Config, now: Date): SyncResponse {
  return poolAnswer(request, config, now).response
}

export function poolAnswer(request: PoolSyncRequest, config: Config, now: Date): PoolAnswer {
  const parent = request.parent
  const { name, namespace, uid } = parent.metadata
  const at = toSeconds(now.getTime())
  const names = poolNames(name)
  const children = indexObjects(request.children, namespace)
  const related = indexObjects(request.related, namespace)
  const lookup = resolveDefinition(name, parent.spec, definitionPolicy(config))
  const deleting = request.finalizing === true || isBeingDeleted(parent)
  const until = lookup.found ? lookup.definition.availableUntil : undefined
  const open = !deleting && (until === undefined || at < until)
  const prepull = lookup.found && open ? prepullOf(lookup.definition, { children, related, uid, config }) : undefined
  const withImages = (answer: PoolAnswer): PoolAnswer => {
    if (prepull === undefined) return answer
    const response: SyncResponse = {
      ...answer.response,
      status: { ...answer.response.status, images: imagesStatus(parent.status, prepull.report, at) },
      children: [...answer.response.children, prepull.daemonSet],
    }
    // The DaemonSet goes at availableUntil, pool or none.
    const resync = resyncAfter(until, at, config)
    if (response.resyncAfterSeconds === undefined && resync !== undefined) response.resyncAfterSeconds = resync
    return { ...answer, response, images: { report: prepull.report, opensAt: prepull.opensAt } }
  }
  const off = (size: number, message?: string): PoolAnswer =>
    withImages({
      response: {
        status: poolStatus(parent.status, { state: PoolState.Off, message, size, counts: NO_PODS }, at),
        children: keptWhileObserved(children, uid, names),
      },
      state: PoolState.Off,
      counts: NO_PODS,
      claims: 0,
    })
  if (!lookup.found) return off(0, lookup.message)
  const definition = lookup.definition
  if (definition.pool === undefined) return off(0)
  // A pool's definition is PerInstance or Static (resolveDefinition refuses PerOwner with a pool), neither of which
  // reads the owner.
  const flagOf = (secretUid: string) =>
    flagData(
      { ownerKey: { namespace, definition: name, ownerKind: '', ownerId: '' }, uid: secretUid, related },
      definition,
      config.flagSecret,
    )
  let staticFlag: string | undefined
  if (definition.flag.mode === 'Static') {
    const flag = flagOf('')
    if (!flag.ok) return off(definition.pool.size, flag.message)
    staticFlag = flag.data
  }
  const expected = (secretUid: string) => staticFlag ?? (flagOf(secretUid) as { data: string }).data

  const rendering = poolRendering(definition, config, staticFlag)
  const guarded = policiesOwn(children, uid, names, definition)
  const observed = observedPool(children, uid, { rendering, guarded, expected })
  // A view made from an earlier release's customize answer (Metacontroller keeps one up to 20 minutes) holds the
  // definition's Challenges rather than tickets: read them, lest every claimed pod read as given up.
  const challenges = objectsOfKind(related, 'Challenge')
  const claimants = (
    challenges.length > 0
      ? poolChallenges(
          challenges.filter((challenge) => field(field(field(challenge, 'spec'), 'definitionRef'), 'name') === name),
        )
      : poolTickets(objectsOfKind(related, 'Service'), name)
  ).filter((claimant) => LABEL_VALUE.test(claimant.uid))
  const plan = planPool({ ...definition.pool, rendering, open, prefix: names.prefix }, observed, claimants)

  const answer: DesiredChild[] = [poolIsolatePolicy(names, definition, config)]
  if (definition.egress === 'Internet') answer.push(poolInternetPolicy(names, config))
  for (const pod of plan.pods) {
    answer.push(...podChildren(pod, { children, uid, names, definition, config, rendering, guarded, expected }))
  }
  answer.push(...secretsOfDropped(children, uid, new Set(plan.pods.map((pod) => pod.name))))

  // Exhausted sends every waiting Challenge cold at once (pool-serving.ts): not while a claim it made is not yet on
  // its pod's Secret, which is how that claim reaches its Challenge.
  const state = !open
    ? PoolState.Closed
    : claimsInFlight(plan.pods, children, uid)
      ? PoolState.Ready
      : openState(plan.counts)
  const response: SyncResponse = {
    status: poolStatus(parent.status, { state, size: definition.pool.size, counts: plan.counts }, at),
    children: answer,
  }
  const resync = open ? resyncAfter(until, at, config) : undefined
  if (resync !== undefined) response.resyncAfterSeconds = resync
  return withImages({ response, state, counts: plan.counts, claims: plan.claims.length })
}

/** A planned claim whose pod's flag Secret is not yet observed carrying it. */
function claimsInFlight(pods: readonly PlannedPod[], children: ObservedIndex, uid: string): boolean {
  return pods.some((pod) => {
    if (pod.claimedBy === undefined) return false
    const secret = ownChild(children, 'Secret', poolFlagSecretName(pod.name), uid)
    return text(field(secret?.metadata.labels, Label.claimedBy)) !== pod.claimedBy
  })
}

/** A claim names a Challenge's uid in a label: a uid no label may hold (never the API server's) claims nothing. */
const LABEL_VALUE = new RegExp(NON_EMPTY_LABEL_VALUE)

/** The policies every pool pod runs under, observed as the definition's own. */
function policiesOwn(children: ObservedIndex, uid: string, names: PoolNames, definition: ResolvedDefinition): boolean {
  return (
    ownChild(children, 'NetworkPolicy', names.isolatePolicy, uid) !== undefined &&
    (definition.egress !== 'Internet' || ownChild(children, 'NetworkPolicy', names.internetPolicy, uid) !== undefined)
  )
}

interface Expectations {
  rendering: string
  /** Whether the policies are the definition's own. */
  guarded: boolean
  /** The flag a pod of today's rendering holds, from its Secret's uid. */
  expected: (secretUid: string) => string
}

/** The flag an observed Secret holds, as its data has it. */
function heldFlag(secret: KubeObject | undefined): unknown {
  return field(field(secret, 'data'), FLAG_KEY)
}

/**
 * The pool as the plan must see it. A pod the hook will not answer again reads as being deleted (its name stays
 * taken, it is neither kept nor claimed, and a new one replaces it when free): a free pod that ended, and a pod that
 * lost what it runs on (a policy, its own Secret, or the Secret its flag was made from, the one its `flag-uid`
 * names). The flag Secret of a claimed pod, observed without its pod, keeps its name taken too: a new pod of that
 * name would be handed the old Secret, its uid and so the flag its player saw. (A Secret whose pod was never
 * claimed holds a flag nobody reached, and is the one a pod not made yet waits for.)
 */
function observedPool(children: ObservedIndex, uid: string, expect: Expectations): PoolPod[] {
  const pods = poolPods(children, uid).map((pod) => ({
    ...pod,
    deleting: pod.deleting || !answerable(pod, children, uid, expect),
  }))
  const podNames = new Set(pods.map((pod) => pod.name))
  // A pod that is not the definition's own keeps its name taken too: a new pod of that name could not be made.
  for (const pod of objectsOfKind(children, 'Pod')) {
    if (podNames.has(pod.metadata.name)) continue
    pods.push({ name: pod.metadata.name, rendering: '', ready: false, deleting: true, claimedBy: undefined })
    podNames.add(pod.metadata.name)
  }
  for (const secret of objectsOfKind(children, 'Secret')) {
    const pod = secret.metadata.name.slice(0, -FLAG_SECRET_SUFFIX.length)
    const claimed = text(field(secret.metadata.labels, Label.claimedBy)) !== undefined
    if (claimed && secret.metadata.name.endsWith(FLAG_SECRET_SUFFIX) && !podNames.has(pod)) {
      pods.push({ name: pod, rendering: '', ready: false, deleting: true, claimedBy: undefined })
    }
  }
  // Nor the name of an observed child that says it is of another kind: Metacontroller matches an answered child to
  // what it observed by group and name, so a new pod of that name would be applied to a pod sent with a wrong kind,
  // its claim removed.
  for (const [kind, byName] of children) {
    if (kind === 'Pod') continue
    for (const name of byName.keys())
      pods.push({ name, rendering: '', ready: false, deleting: true, claimedBy: undefined })
  }
  return pods
}

function answerable(pod: PoolPod, children: ObservedIndex, uid: string, expect: Expectations): boolean {
  const object = findObject(children, 'Pod', pod.name) as KubeObject
  if (podEnded(object)) return false
  // A claimed pod whose containers keep failing is given up: its Secret goes with it, and its player's run goes on
  // cold (pool-serving.ts). A free one that fails is never claimed (it is not ready) and stays, lest a broken image
  // make the pool create pods without end.
  if (pod.claimedBy !== undefined && podProblem(object)?.fatal === true) return false
  const secret = ownChild(children, 'Secret', poolFlagSecretName(pod.name), uid)
  const secretUid = text(secret?.metadata.uid)
  if (!expect.guarded || secretUid === undefined) return false
  if (text(field(object.metadata.annotations, Annotation.flagUid)) !== secretUid) return false
  // A claimed pod of an earlier rendering keeps the flag it started with; its Secret is kept as it is.
  return pod.rendering !== expect.rendering || heldFlag(secret) === expect.expected(secretUid)
}

interface PodContext extends Expectations {
  children: ObservedIndex
  uid: string
  names: PoolNames
  definition: ResolvedDefinition
  config: Config
}

/**
 * A planned pod's children: its Secret first, then the Pod once the Secret is observed as the definition's own and
 * holding the flag, and the policies too. A claimed pod of an earlier rendering (the only kind kept) is answered as
 * Metacontroller last applied it, its claim included, so nothing in it changes: a pod's spec cannot change in place.
 */
function podChildren(pod: PlannedPod, context: PodContext): DesiredChild[] {
  const { children, uid, names } = context
  const secret = ownChild(children, 'Secret', poolFlagSecretName(pod.name), uid)
  if (pod.rendering !== context.rendering) {
    const kept = retain(findObject(children, 'Pod', pod.name) as KubeObject)
    return [withClaim(retain(secret as KubeObject), pod.claimedBy), withClaim(kept, pod.claimedBy)]
  }
  const secretUid = text(secret?.metadata.uid)
  // A Static flag is known at once; a PerInstance one once the Secret's uid is.
  const data =
    secretUid === undefined && context.definition.flag.mode === 'PerInstance'
      ? undefined
      : context.expected(secretUid ?? '')
  // The Secret tells the claim to its Challenge (pool-serving.ts), so it carries a claim only once the pod's own is
  // observed: the API server let that one through only if the pod was free, whereas a claim answered now may be
  // refused (the pod changed since this view).
  const observedClaim = text(field(ownChild(children, 'Pod', pod.name, uid)?.metadata.labels, Label.claimedBy))
  const answer: DesiredChild[] = [poolFlagSecret(names, pod.name, data, observedClaim)]
  if (context.guarded && secretUid !== undefined && heldFlag(secret) === data) {
    answer.push(
      poolPod({
        names,
        definition: context.definition,
        config: context.config,
        name: pod.name,
        slot: pod.name.slice(names.prefix.length),
        rendering: context.rendering,
        claimedBy: pod.claimedBy,
        flagUid: secretUid,
      }),
    )
  }
  return answer
}

/**
 * The flag Secrets of pods still observed that the plan no longer answers, as they are: a pod never loses its flag
 * file. A claimed pod's carries its claim.
 */
function secretsOfDropped(children: ObservedIndex, uid: string, planned: ReadonlySet<string>): DesiredChild[] {
  const kept: DesiredChild[] = []
  for (const pod of objectsOfKind(children, 'Pod')) {
    if (!isOwnedBy(pod, uid) || planned.has(pod.metadata.name)) continue
    const secret = ownChild(children, 'Secret', poolFlagSecretName(pod.metadata.name), uid)
    if (secret !== undefined) kept.push(withClaim(retain(secret), text(field(pod.metadata.labels, Label.claimedBy))))
  }
  return kept
}

/**
 * No pool to run (none asked for, the definition invalid, or its Static flag missing): no pod, and what the pods
 * still observed run on kept as it is until they are gone (their flag Secrets, the policies), so a terminating pod is
 * never unisolated and never loses its flag file.
 */
function keptWhileObserved(children: ObservedIndex, uid: string, names: PoolNames): DesiredChild[] {
  const pods = objectsOfKind(children, 'Pod').filter((pod) => isOwnedBy(pod, uid))
  if (pods.length === 0) return []
  const policies = [names.isolatePolicy, names.internetPolicy]
    .map((name) => ownChild(children, 'NetworkPolicy', name, uid))
    .filter((policy) => policy !== undefined)
    .map(retain)
  return [...policies, ...secretsOfDropped(children, uid, new Set())]
}

interface PrepullContext {
  children: ObservedIndex
  related: ObservedIndex
  uid: string
  config: Config
}

/** An open definition's pre-pull (images.ts): its DaemonSet and what it reports; none with prepull Off. */
function prepullOf(
  definition: ResolvedDefinition,
  { children, related, uid, config }: PrepullContext,
): { daemonSet: DesiredChild; report: ImagesReport; opensAt: number | undefined } | undefined {
  if (definition.prepull === PrepullMode.Off) return undefined
  return {
    daemonSet: imagesDaemonSet(definition, config),
    report: imagesReport(children, related, definition, uid, config),
    opensAt: definition.availableFrom,
  }
}
