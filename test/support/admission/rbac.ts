/**
 * Kubernetes' RBAC authorizer over the Roles, ClusterRoles and their bindings given (the manifests, and whatever a
 * test adds): what the `authorizer` of an admission policy's CEL answers, and what `kubectl auth can-i` would say.
 * As the API server decides: a ClusterRoleBinding grants its role everywhere, a RoleBinding in its namespace only (a
 * ClusterRole or a Role of that namespace); a rule matches by API group, resource (`*` for every resource,
 * `<resource>/<subresource>`, and a `*` in place of either half), verb (`*`) and resourceNames (none: every name). The
 * group `system:masters` is allowed everything, as cluster-admin is. Aggregated ClusterRoles and non-RBAC
 * authorizers are not modelled.
 */

type Json = Record<string, unknown>

export interface User {
  username: string
  uid?: string
  groups?: readonly string[]
  extra?: Readonly<Record<string, readonly string[]>>
}

/** A resource request (`apiGroup` '' for the core group; `namespace` '' for cluster scope) or a non-resource path. */
export type Attributes =
  | {
      verb: string
      apiGroup: string
      resource: string
      subresource?: string
      namespace?: string
      name?: string
    }
  | { verb: string; path: string }

export interface Authorization {
  allowed: boolean
  /** which binding allowed it, as RBAC words it; empty when nothing allowed it */
  reason: string
}

interface Rule {
  apiGroups?: string[]
  resources?: string[]
  resourceNames?: string[]
  verbs?: string[]
  nonResourceURLs?: string[]
}

interface Subject {
  kind: string
  name: string
  namespace?: string
}

interface Binding {
  kind: 'RoleBinding' | 'ClusterRoleBinding'
  name: string
  namespace?: string
  roleRef: { kind: string; name: string }
  subjects: Subject[]
}

const metadataOf = (object: Json) => (object.metadata ?? {}) as { name?: string; namespace?: string }
const isRbac = (object: Json) => String(object.apiVersion).startsWith('rbac.authorization.k8s.io/')

function subjectMatches(subject: Subject, user: User, bindingNamespace: string | undefined): boolean {
  switch (subject.kind) {
    case 'User':
      return subject.name === user.username
    case 'Group':
      return (user.groups ?? []).includes(subject.name)
    case 'ServiceAccount':
      return user.username === `system:serviceaccount:${subject.namespace ?? bindingNamespace}:${subject.name}`
    default:
      return false
  }
}

function resourceMatches(patterns: readonly string[], resource: string, subresource: string | undefined): boolean {
  const wanted = subresource === undefined || subresource === '' ? resource : `${resource}/${subresource}`
  return patterns.some((pattern) => {
    if (pattern === '*' || pattern === wanted) return true
    if (subresource === undefined || subresource === '') return false
    return pattern === `*/${subresource}` || pattern === `${resource}/*`
  })
}

function ruleAllows(rule: Rule, attributes: Attributes): boolean {
  const verbs = rule.verbs ?? []
  if (!verbs.includes('*') && !verbs.includes(attributes.verb)) return false
  if ('path' in attributes) {
    return (rule.nonResourceURLs ?? []).some(
      (url) =>
        url === '*' || url === attributes.path || (url.endsWith('*') && attributes.path.startsWith(url.slice(0, -1))),
    )
  }
  const groups = rule.apiGroups ?? []
  if (!groups.includes('*') && !groups.includes(attributes.apiGroup)) return false
  if (!resourceMatches(rule.resources ?? [], attributes.resource, attributes.subresource)) return false
  const names = rule.resourceNames ?? []
  return names.length === 0 || (attributes.name !== undefined && names.includes(attributes.name))
}

export class Rbac {
  readonly #roles = new Map<string, Rule[]>()
  readonly #bindings: Binding[] = []

  constructor(objects: readonly Json[]) {
    for (const object of objects) {
      if (!isRbac(object)) continue
      const { name = '', namespace } = metadataOf(object)
      if (object.kind === 'ClusterRole') this.#roles.set(`ClusterRole/${name}`, (object.rules ?? []) as Rule[])
      if (object.kind === 'Role') this.#roles.set(`Role/${namespace}/${name}`, (object.rules ?? []) as Rule[])
      if (object.kind === 'RoleBinding' || object.kind === 'ClusterRoleBinding') {
        this.#bindings.push({
          kind: object.kind,
          name,
          ...(object.kind === 'RoleBinding' ? { namespace } : {}),
          roleRef: object.roleRef as Binding['roleRef'],
          subjects: (object.subjects ?? []) as Subject[],
        })
      }
    }
  }

  /** The rules of a ClusterRole, or of a Role (`namespace/name`); undefined when there is none of that name. */
  rules(kind: 'ClusterRole' | 'Role', name: string): Rule[] | undefined {
    return this.#roles.get(`${kind}/${name}`)
  }

  authorize(user: User, attributes: Attributes): Authorization {
    if ((user.groups ?? []).includes('system:masters')) return { allowed: true, reason: '' }
    const namespace = 'path' in attributes ? '' : (attributes.namespace ?? '')
    for (const binding of this.#bindings) {
      // A RoleBinding grants only in its own namespace, never at cluster scope or on a path.
      if (binding.kind === 'RoleBinding' && (binding.namespace !== namespace || namespace === '')) continue
      const subject = binding.subjects.find((each) => subjectMatches(each, user, binding.namespace))
      if (subject === undefined) continue
      const role =
        binding.roleRef.kind === 'ClusterRole'
          ? this.#roles.get(`ClusterRole/${binding.roleRef.name}`)
          : this.#roles.get(`Role/${binding.namespace}/${binding.roleRef.name}`)
      if (!(role ?? []).some((rule) => ruleAllows(rule, attributes))) continue
      const where =
        binding.kind === 'RoleBinding'
          ? `RoleBinding "${binding.name}/${namespace}"`
          : `ClusterRoleBinding "${binding.name}"`
      return {
        allowed: true,
        reason: `RBAC: allowed by ${where} of ${binding.roleRef.kind} "${binding.roleRef.name}" to ${subject.kind} "${subject.name}"`,
      }
    }
    return { allowed: false, reason: '' }
  }
}
