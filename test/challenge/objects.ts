// The instance the domain tests of single rules look at (decisions, workload, flag, observed and budget tests),
// and a maker of bare objects in its namespace.
import { childNames } from '../../src/challenge/names.js'
import type { KubeObject } from '../../src/contract/protocol.js'

export const NAMESPACE = 'ctf'
export const UID = '5b1f0c2e-8f7d-4c53-9a59-0d7b3a1e2f10'
export const names = childNames('web-login-u-alice', UID)

/** A `kind` object named `name` in NAMESPACE; `extra` replaces whole top-level fields (metadata too). */
export function object(kind: string, name: string, extra: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: 'v1', kind, metadata: { name, namespace: NAMESPACE }, ...extra }
}

/** What Metacontroller writes on each child it creates for the Challenge of UID: the hook counts no other child as its own. */
export const OWNED_BY_UID = [
  {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'Challenge',
    name: 'web-login-u-alice',
    uid: UID,
    controller: true,
    blockOwnerDeletion: true,
  },
]

/** A child of the instance as Metacontroller made it: named `name` in NAMESPACE, owned by the Challenge of UID. */
export function child(kind: string, name: string, extra: Record<string, unknown> = {}): KubeObject {
  return object(kind, name, { metadata: { name, namespace: NAMESPACE, ownerReferences: OWNED_BY_UID }, ...extra })
}
