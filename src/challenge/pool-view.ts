/**
 * What a pool's sync request says, read as the facts its plan is made from (pool-claims.ts): the pool's own pods
 * with their claims, and the definition's Challenges with what their status asks of the pool. Everything here was
 * written by someone else (the kubelet, Metacontroller, a Challenge's hook, or anyone able to edit a Challenge), so
 * every value is read with its type checked and a malformed one reads as absent, never as a claim.
 */
import type { KubeObject } from '../contract/protocol.js'
import { Label, ServedBy } from '../contract/api.js'
import type { PoolChallenge, PoolPod } from './pool-claims.js'
import { isBeingDeleted, isOwnedBy, objectsOfKind, type ObservedIndex } from './observed.js'
import { readTime } from './time.js'
import { field, text } from './untrusted.js'
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
