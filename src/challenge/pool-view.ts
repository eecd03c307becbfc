/**
 * What a pool's sync request says, read as the facts its plan is made from (pool-claims.ts): the pool's own pods
 * with their claims, and the claimants with what they ask of the pool, from the tickets their Services carry (or,
 * from a view made by an earlier release's customize answer, from the Challenges' status). Everything here was
 * written by someone else (the kubelet, Metacontroller, a Challenge's hook, or anyone able to edit a Challenge), so
 * every value is read with its type checked and a malformed one reads as absent, never as a claim.
 */
import type { KubeObject } from '../contract/protocol.js'
import { Annotation, API_VERSION, Label, ServedBy } from '../contract/api.js'
import type { PoolChallenge, PoolPod } from './pool-claims.js'
import { isBeingDeleted, isOwnedBy, objectsOfKind, type ObservedIndex } from './observed.js'
import { readTime } from './time.js'
import { field, list, text } from './untrusted.js'
import { readySince } from './workload.js'

function label(object: KubeObject, key: string): string | undefined {
  return text(field(object.metadata.labels, key))
}

/**
 * The pool's pods: the observed Pods this definition owns (a pod that merely carries a pool's labels is nobody's
 * pool pod), ready when their Ready condition says so.
 */
export function poolPods(children: ObservedIndex, definitionUid: string): PoolPod[] {
  return objectsOfKind(children, 'Pod')
    .filter((pod) => isOwnedBy(pod, definitionUid))
    .map((pod) => ({
      name: pod.metadata.name,
      rendering: label(pod, Label.poolRendering) ?? '',
      ready: readySince(pod) !== undefined,
      deleting: isBeingDeleted(pod),
      claimedBy: label(pod, Label.claimedBy),
    }))
}

/**
 * The definition's Challenges as the pool sees them: a Challenge being deleted asks for nothing and holds nothing
 * (its pod is given up); one with no uid is not one the API server stored. A Challenge admitted at an unreadable
 * time waits behind every readable one.
 */
export function poolChallenges(related: readonly KubeObject[]): PoolChallenge[] {
  const challenges: PoolChallenge[] = []
  for (const challenge of related) {
    const uid = text(challenge.metadata.uid)
    if (uid === undefined || isBeingDeleted(challenge)) continue
    const pool = field(field(challenge, 'status'), 'pool')
    challenges.push({
      uid,
      name: challenge.metadata.name,
      waiting: field(pool, 'state') === ServedBy.Waiting,
      // A released run's record names the pod it had: it holds it no longer.
      recordedPod: field(pool, 'state') === ServedBy.Claimed ? text(field(pool, 'pod')) : undefined,
      admittedAt: readTime(field(field(challenge, 'status'), 'admittedAt')) ?? Number.MAX_SAFE_INTEGER,
      createdAt: readTime(challenge.metadata.creationTimestamp) ?? Number.MAX_SAFE_INTEGER,
    })
  }
  return challenges
}

/**
 * The claimants as their Services tell the pool (docs/api.md#warm-pools): a Service labelled with the definition
 * whose controller is a Challenge, which is then the claimant; a Service that is not a Challenge's, or that is being
 * deleted (its run ended or its Challenge is going), asks for nothing and holds nothing. The label is written with
 * the definition's name by that Challenge's hook, from the definition it resolved.
 */
export function poolTickets(services: readonly KubeObject[], definition: string): PoolChallenge[] {
  const claimants: PoolChallenge[] = []
  for (const service of services) {
    const owner = list((service.metadata as Record<string, unknown>).ownerReferences).find(
      (reference) => field(reference, 'controller') === true,
    )
    const uid = text(field(owner, 'uid'))
    const name = text(field(owner, 'name'))
    if (
      uid === undefined ||
      name === undefined ||
      field(owner, 'kind') !== 'Challenge' ||
      field(owner, 'apiVersion') !== API_VERSION ||
      text(field(service.metadata.labels, Label.poolTicket)) !== definition ||
      isBeingDeleted(service)
    )
      continue
    const annotations = service.metadata.annotations
    const state = field(annotations, Annotation.poolState)
    claimants.push({
      uid,
      name,
      waiting: state === ServedBy.Waiting,
      recordedPod: state === ServedBy.Claimed ? text(field(annotations, Annotation.poolPod)) : undefined,
      admittedAt: readTime(field(annotations, Annotation.admittedAt)) ?? Number.MAX_SAFE_INTEGER,
      createdAt: readTime(service.metadata.creationTimestamp) ?? Number.MAX_SAFE_INTEGER,
    })
  }
  return claimants
}
