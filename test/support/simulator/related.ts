// Customize-hook rules (relatedResources) resolved like Metacontroller's customize manager. One predicate per
// rule serves both directions: listing the related objects for a request, and deciding which parents to
// resync when an object changes.
import type { ClusterBackend } from './backend.js'
import { labelMatcher, resourceByName, type KubeObject, type ResourceType } from './objects.js'
import type { RelatedRule } from './response.js'

export type HookVersion = 'v1' | 'v2'

export interface ResolvedRule {
  resource: ResourceType
  /** whether an object of any kind is selected by the rule */
  matches: (obj: KubeObject) => boolean
}

/** Throws for an unknown resource or an invalid rule, as the sync would fail. */
export function resolveRule(rule: RelatedRule, parent: KubeObject, version: HookVersion): ResolvedRule {
  const resource = resourceByName(rule.apiVersion, rule.resource)
  if (!resource) throw new Error(`can't find resource "${rule.resource}" in apiVersion "${rule.apiVersion}"`)
  const parentNamespace = parent.metadata.namespace
  const namespace = rule.namespace ?? ''
  const names = rule.names ?? []
  const hasSelector = rule.labelSelector != null
  if (names.length > 0 && (hasSelector || rule.namespaceSelector != null)) {
    throw new Error(
      `related rule cannot have both names and labelSelector/namespaceSelector specified: ${JSON.stringify(rule)}`,
    )
  }
  if (rule.namespaceSelector != null) {
    // Needs Namespace objects, which the simulated cluster does not have; a v1 hook may not use it at all.
    throw new Error(
      version === 'v1'
        ? 'namespaceSelector is not supported for namespaced parent in v1 hook version'
        : 'namespaceSelector is not supported by the simulator',
    )
  }
  // A v1 hook of a namespaced parent only ever sees its parent's namespace.
  if (version === 'v1' && namespace !== '' && namespace !== parentNamespace) {
    throw new Error(
      `requested related object namespace ${namespace} differs from parent object namespace ${String(parentNamespace)}`,
    )
  }
  const labels = labelMatcher(rule.labelSelector)
  const inNamespace = (obj: KubeObject) =>
    resource.namespaced === false ||
    (version === 'v1'
      ? obj.metadata.namespace === parentNamespace
      : namespace === '' || obj.metadata.namespace === namespace)
  const selected =
    names.length > 0
      ? (obj: KubeObject) => names.includes(obj.metadata.name)
      : (obj: KubeObject) => labels(obj.metadata.labels)
  return {
    resource,
    matches: (obj) =>
      obj.apiVersion === resource.apiVersion && obj.kind === resource.kind && inNamespace(obj) && selected(obj),
  }
}

export function listRelated(cluster: Pick<ClusterBackend, 'list'>, rule: ResolvedRule): KubeObject[] {
  return cluster.list(rule.resource.apiVersion, rule.resource.kind).filter(rule.matches)
}
