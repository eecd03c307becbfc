/**
 * What an instance that no longer runs keeps, one step per sync (finalize, and the sync of an ended run): first the
 * traffic path (the route, the Service), then the workload (its Pod; a Deployment of an earlier release), and the
 * NetworkPolicies and the flag Secret only once no pod of the instance is left, so a terminating pod is never
 * unisolated and never loses its flag file.
 */
import type { DesiredChild, KubeObject } from '../contract/protocol.js'
import { isBeingDeleted, objectsOfKind, type ObservedIndex } from './observed.js'
import { field, record } from './untrusted.js'
import { ROUTE_KINDS } from './traffic-routes.js'

const LAST_APPLIED = /last-applied-configuration$/
/** Where Metacontroller keeps the child as the hook last answered it (its 3-way merge's base). */
export const LAST_APPLIED_KEY = 'metacontroller.k8s.io/last-applied-configuration'
const SYSTEM_METADATA = ['name', 'namespace', 'labels', 'annotations'] as const

/**
 * An observed child, kept as it is: as the hook last answered it (Metacontroller's last-applied annotation), so
 * Metacontroller finds nothing to change: with the Pod's `Recreate` strategy any change would delete the very pod
 * the teardown waits for, and with `InPlace` it would be a needless write. A child without that annotation (made
 * by hand, or by an older Metacontroller) is kept as observed, without system fields or status.
 */
export function retain(object: KubeObject): DesiredChild {
  return lastApplied(object) ?? withoutSystemFields(object)
}

function lastApplied(object: KubeObject): DesiredChild | undefined {
  const text = object.metadata.annotations?.[LAST_APPLIED_KEY]
  if (text === undefined) return undefined
  let applied: unknown
  try {
    applied = JSON.parse(text)
  } catch {
    return undefined
  }
  const metadata = record(field(applied, 'metadata'))
  return field(applied, 'kind') === object.kind &&
    field(applied, 'apiVersion') === object.apiVersion &&
    metadata?.name === object.metadata.name
    ? (applied as DesiredChild)
    : undefined
}

/** The observed content and metadata, none of the system fields (status, uid, resourceVersion, managedFields, ownerReferences). */
function withoutSystemFields(object: KubeObject): DesiredChild {
  const { metadata, status: _status, ...content } = object
  const kept: Record<string, unknown> = {}
  for (const key of SYSTEM_METADATA) if (metadata[key] !== undefined) kept[key] = metadata[key]
  if (metadata.annotations) {
    const annotations = Object.fromEntries(
      Object.entries(metadata.annotations).filter(([key]) => !LAST_APPLIED.test(key)),
    )
    if (Object.keys(annotations).length > 0) kept.annotations = annotations
    else delete kept.annotations
  }
  return { ...content, metadata: kept } as DesiredChild
}

const TRAFFIC_KINDS = [...ROUTE_KINDS, 'Service']
/** The workload: the Pod, and a Deployment an earlier release made (its pods go with it). */
const WORKLOAD_KINDS = ['Pod', 'Deployment']
const GUARD_KINDS = ['NetworkPolicy', 'Secret']

/**
 * Ordered teardown: the children to keep, an empty list once nothing is left to wait for. A child already being
 * deleted is not kept (it is going), but still counts as observed: the next step waits for it to be gone.
 */
export function teardown(children: ObservedIndex): DesiredChild[] {
  const live = (kind: string) => objectsOfKind(children, kind).filter((object) => !isBeingDeleted(object))
  const observed = (kinds: string[]) => kinds.some((kind) => objectsOfKind(children, kind).length > 0)
  const keep: KubeObject[] = []
  const trafficGone = !observed(TRAFFIC_KINDS)
  if (!trafficGone) for (const kind of WORKLOAD_KINDS) keep.push(...live(kind))
  if (!trafficGone || observed(WORKLOAD_KINDS)) {
    for (const kind of GUARD_KINDS) keep.push(...live(kind))
  }
  return keep.map(retain)
}
