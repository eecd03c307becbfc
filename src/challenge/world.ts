/**
 * The world one request shows: the instance, its child names and pod labels, its owner and instance id, the previous
 * status, the observed children and related objects indexed by kind and name, the owner's other Challenges, and the
 * hook version customize runs at. Everything the decision (lifecycle.ts) reads, built once per request.
 */
import type { Config } from '../config/config.js'
import type { ChallengeObject, KubeObject, SyncRequest } from '../contract/protocol.js'
import { API_VERSION, Label } from '../contract/api.js'
import type { World } from './lifecycle.js'
import { childNames, podLabels } from './names.js'
import { findObject, indexObjects, type ObservedIndex } from './observed.js'
import { instanceId, type OwnerKey } from './hmac.js'
import { readPreviousStatus } from './status.js'
import { field, text } from './untrusted.js'

function ownerKeyOf(challenge: ChallengeObject): OwnerKey {
  return {
    namespace: challenge.metadata.namespace,
    definition: challenge.spec.definitionRef.name,
    ownerKind: challenge.spec.owner.kind,
    ownerId: challenge.spec.owner.id,
  }
}

export function observe(request: SyncRequest, config: Config): World {
  const challenge = request.parent
  const namespace = challenge.metadata.namespace
  const ownerKey = ownerKeyOf(challenge)
  const names = childNames(challenge.metadata.name, challenge.metadata.uid)
  const children = indexObjects(request.children, namespace)
  return {
    challenge,
    namespace,
    names,
    podLabels: podLabels(names, legacySelector(children, names.base)),
    ownerKey,
    instanceId: instanceId(config.flagSecret, ownerKey),
    previous: readPreviousStatus(challenge.status),
    children,
    childGroups: new Set(Object.keys(request.children ?? {})),
    related: indexObjects(request.related, namespace),
    siblings: ownerChallenges(request, config.ownerBudgetScope === 'Cluster' ? undefined : namespace),
    customizeVersion: hookVersion(request.controller, 'customize'),
  }
}

/**
 * The owner's Challenges the customize hook related, from every namespace the request holds (hook version v2 can
 * relate them across namespaces; a budget counted per namespace keeps only the instance's own, `inNamespace`).
 */
function ownerChallenges(request: SyncRequest, inNamespace: string | undefined): KubeObject[] {
  return Object.entries(request.related ?? {})
    .filter(([group]) => group === `Challenge.${API_VERSION}`)
    .flatMap(([, objects]) => Object.values(objects))
    .filter((object) => inNamespace === undefined || object.metadata.namespace === inNamespace)
}

/** The version (`v1`, `v2`) of one of the CompositeController's hooks, as the request carries it; v1 when unset. */
export function hookVersion(controller: unknown, hook: 'sync' | 'customize'): string {
  return text(field(field(field(field(controller, 'spec'), 'hooks'), hook), 'version')) ?? 'v1'
}

/** A Deployment made before the uid label existed: its selector cannot change, so the instance keeps it. */
function legacySelector(children: ObservedIndex, base: string): boolean {
  const deployment = findObject(children, 'Deployment', base)
  if (deployment === undefined) return false
  const matchLabels = (deployment.spec as { selector?: { matchLabels?: Record<string, unknown> } } | undefined)
    ?.selector?.matchLabels
  return matchLabels?.[Label.instance] === base && matchLabels[Label.uid] === undefined
}
