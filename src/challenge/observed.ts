/**
 * The observed world of one request, indexed by each object's own kind and name. Group keys
 * (`Deployment.apps/v1`) and inner keys (`name` for hook v1, `namespace/name` for v2) are never parsed for
 * names, so both hook versions get the same answer.
 */
import type { KubeObject, ObjectGroups } from '../contract/protocol.js'
import { field, list } from './untrusted.js'

export type ObservedIndex = Map<string, Map<string, KubeObject>>

const named = (value: unknown): value is string => typeof value === 'string' && value !== ''

/**
 * The kind and apiVersion are the object's own; its group key (`<Kind>.<apiVersion>`) only fills in what an object
 * was sent without. Metacontroller always sends both, but a child kept as observed (teardown.ts, retain) is answered
 * with them, and an answer without them is one Metacontroller cannot apply.
 */
function typed(groupKey: string, object: KubeObject): KubeObject {
  if (named(object.kind) && named(object.apiVersion)) return object
  const dot = groupKey.indexOf('.')
  return {
    ...object,
    kind: named(object.kind) ? object.kind : groupKey.slice(0, dot < 0 ? undefined : dot),
    apiVersion: named(object.apiVersion) ? object.apiVersion : dot < 0 ? '' : groupKey.slice(dot + 1),
  }
}

export function indexObjects(groups: ObjectGroups | undefined, namespace: string): ObservedIndex {
  const index: ObservedIndex = new Map()
  for (const [groupKey, group] of Object.entries(groups ?? {})) {
    for (const object of Object.values(group)) {
      // Objects of another namespace (possible with v2 hooks) are not this parent's.
      if (object.metadata.namespace !== undefined && object.metadata.namespace !== namespace) continue
      const complete = typed(groupKey, object)
      const kind = complete.kind as string
      let byName = index.get(kind)
      if (!byName) index.set(kind, (byName = new Map<string, KubeObject>()))
      byName.set(object.metadata.name, complete)
    }
  }
  return index
}

export function findObject(index: ObservedIndex, kind: string, name: string): KubeObject | undefined {
  return index.get(kind)?.get(name)
}

export function objectsOfKind(index: ObservedIndex, kind: string): KubeObject[] {
  return [...(index.get(kind)?.values() ?? [])]
}

export function countObjects(index: ObservedIndex): number {
  let count = 0
  for (const byName of index.values()) count += byName.size
  return count
}

export function isBeingDeleted(object: KubeObject): boolean {
  return typeof object.metadata.deletionTimestamp === 'string'
}

/**
 * A child Metacontroller made for this parent: its controller owner reference names the parent's uid. An object
 * that only carries the child's name (made by someone else before the instance, which Metacontroller then fails to
 * create and never claims) never is.
 */
export function isOwnedBy(object: KubeObject, parentUid: string): boolean {
  return list((object.metadata as Record<string, unknown>).ownerReferences).some(
    (reference) => field(reference, 'controller') === true && field(reference, 'uid') === parentUid,
  )
}

/** The named child of this parent, when it is observed, is its own and is not being deleted. */
export function ownChild(index: ObservedIndex, kind: string, name: string, parentUid: string): KubeObject | undefined {
  const object = findObject(index, kind, name)
  return object !== undefined && isOwnedBy(object, parentUid) && !isBeingDeleted(object) ? object : undefined
}
