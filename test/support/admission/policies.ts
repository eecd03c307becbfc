/**
 * The API server's ValidatingAdmissionPolicy admission, offline: every ValidatingAdmissionPolicy and binding among
 * the objects given (the manifests, components included), evaluated against one request as the API server's
 * dispatcher does (k8s.io/apiserver, plugin/policy/validating, read for this harness):
 *
 * - a policy applies when its matchConstraints match the request (resourceRules with operations, groups, versions,
 *   resources and subresources, resourceNames, scope; excludeResourceRules; namespaceSelector; objectSelector), and
 *   each of its bindings whose matchResources match too;
 * - params: with a paramKind, the binding's paramRef finds them among the stored objects (by name, or by selector,
 *   in paramRef.namespace or else the request's namespace for a namespaced kind); each param is evaluated on its
 *   own; none found is a denial when parameterNotFoundAction is Deny; a binding without paramRef evaluates with
 *   `params` null;
 * - matchConditions in order: any false skips the policy; an error (and none false) applies the failurePolicy;
 * - variables, each able to read the ones before it, evaluated when first read and then kept (lazily, as the API
 *   server does: an unread variable that would fail fails nothing);
 * - validations in order: true admits; an error applies the failurePolicy (Fail: a denial whose message is the
 *   error, reason Invalid); anything else denies with its reason (default Invalid) and the first of: the
 *   messageExpression's result (a non-empty one-line string; evaluated without `authorizer`), the message, or
 *   `failed expression: <expression>`;
 * - a denial counts per the binding's validationActions: Deny refuses the request, Warn adds a warning, Audit
 *   records it. The answer names the first denial, as the API server's does.
 *
 * What it does not do: type-check against schemas, count CEL cost, evaluate auditAnnotations or
 * MutatingAdmissionPolicies, or convert between versions (matchPolicy). The authorizer is RBAC over the Roles and
 * bindings given (rbac.ts).
 */
import { kubernetesCel, Authorizer, ResourceCheck, toCel } from './cel.js'
import { Rbac, type User } from './rbac.js'

type Json = Record<string, unknown>

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT'

export interface AdmissionAttempt {
  user: User
  operation: Operation
  /** the resource as the API server names it; group '' for the core group */
  resource: { group: string; version: string; resource: string }
  subresource?: string
  /** the request's namespace; unset for a cluster-scoped resource */
  namespace?: string
  /** the object's name (default: the object's or old object's metadata.name) */
  name?: string
  /** CREATE and UPDATE: the object as it would be stored */
  object?: Json
  /** UPDATE and DELETE: the object as it is stored */
  oldObject?: Json
  /** the request's Namespace as stored (default: a Namespace of that name, labelled with its name, not deleting) */
  namespaceObject?: Json
  /** objects the API server holds besides the ones the harness was built with: params, more Roles and bindings */
  stored?: readonly Json[]
  dryRun?: boolean
}

export interface PolicyDecision {
  policy: string
  binding: string | undefined
  /** what the decision does, after the binding's validationActions */
  action: 'Deny' | 'Warn' | 'Audit'
  /** Forbidden, Invalid, ... as the validation says (Invalid by default and for errors) */
  reason: string
  message: string
  /** the decision came from an error (evaluation, configuration) under failurePolicy Fail */
  error: boolean
}

export interface AdmissionVerdict {
  allowed: boolean
  /** the HTTP status of the refusal (403 Forbidden, 422 Invalid, ...); undefined when allowed */
  code: number | undefined
  reason: string | undefined
  /** the first denial's words, after "<resource> "<name>" is forbidden: " */
  message: string | undefined
  /** every decision that refused, warned or audited, in order */
  decisions: PolicyDecision[]
  warnings: string[]
}

interface Expression {
  expression: string
}
interface Validation extends Expression {
  message?: string
  messageExpression?: string
  reason?: string
}
interface LabelSelector {
  matchLabels?: Record<string, string>
  matchExpressions?: { key: string; operator: string; values?: string[] }[]
}
interface Rule {
  apiGroups?: string[]
  apiVersions?: string[]
  operations?: string[]
  resources?: string[]
  resourceNames?: string[]
  scope?: string
}
interface MatchResources {
  resourceRules?: Rule[]
  excludeResourceRules?: Rule[]
  namespaceSelector?: LabelSelector
  objectSelector?: LabelSelector
}
interface PolicySpec {
  failurePolicy?: 'Fail' | 'Ignore'
  paramKind?: { apiVersion: string; kind: string }
  matchConstraints?: MatchResources
  matchConditions?: (Expression & { name: string })[]
  variables?: (Expression & { name: string })[]
  validations?: Validation[]
}
interface BindingSpec {
  policyName: string
  paramRef?: { name?: string; namespace?: string; selector?: LabelSelector; parameterNotFoundAction?: string }
  matchResources?: MatchResources
  validationActions?: string[]
}
interface Named<S> {
  kind: string
  metadata: { name: string; namespace?: string; labels?: Record<string, string> }
  spec: S
}

const ADMISSION = 'admissionregistration.k8s.io/'
/** Kinds whose scope the harness knows without a CRD: the built-in kinds a policy could take as params. */
const BUILTIN_SCOPE: Record<string, 'Namespaced' | 'Cluster'> = {
  'v1/ConfigMap': 'Namespaced',
  'v1/Secret': 'Namespaced',
  'v1/Namespace': 'Cluster',
}

const REASON_CODES: Record<string, number> = { Forbidden: 403, Unauthorized: 401, RequestEntityTooLarge: 413 }

/** An error of evaluation, worded as the API server's. */
class ExpressionError extends Error {}

function labelsOf(object: Json | undefined | null): Record<string, string> {
  return ((object?.metadata as Json | undefined)?.labels ?? {}) as Record<string, string>
}

export function selects(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (selector === undefined) return true
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const has = key in labels
    const ok =
      operator === 'In'
        ? has && values.includes(labels[key] as string)
        : operator === 'NotIn'
          ? !has || !values.includes(labels[key] as string)
          : operator === 'Exists'
            ? has
            : operator === 'DoesNotExist'
              ? !has
              : false
    if (!ok) return false
  }
  return true
}

function anyOr(list: readonly string[] | undefined, value: string): boolean {
  return (list ?? []).some((each) => each === '*' || each === value)
}

function ruleMatches(rule: Rule, a: AdmissionAttempt, name: string): boolean {
  if (!anyOr(rule.operations, a.operation)) return false
  if (!anyOr(rule.apiGroups, a.resource.group) || !anyOr(rule.apiVersions, a.resource.version)) return false
  const sub = a.subresource ?? ''
  const wanted = sub === '' ? a.resource.resource : `${a.resource.resource}/${sub}`
  const resourceOk = (rule.resources ?? []).some(
    (pattern) =>
      pattern === wanted ||
      pattern === '*/*' ||
      (pattern === '*' && sub === '') ||
      (sub !== '' && (pattern === `*/${sub}` || pattern === `${a.resource.resource}/*`)),
  )
  if (!resourceOk) return false
  const scope = rule.scope ?? '*'
  if (scope === 'Namespaced' && a.namespace === undefined) return false
  if (scope === 'Cluster' && a.namespace !== undefined) return false
  const names = rule.resourceNames ?? []
  return names.length === 0 || names.includes(name)
}

export class AdmissionPolicies {
  readonly policies: Named<PolicySpec>[]
  readonly bindings: Named<BindingSpec>[]
  readonly #objects: readonly Json[]

  /** Every ValidatingAdmissionPolicy and binding among `objects`; the rest (Roles, CRDs) serve RBAC and params. */
  constructor(objects: readonly Json[]) {
    this.#objects = objects
    const of = (kind: string) =>
      objects.filter(
        (object) => object.kind === kind && String(object.apiVersion).startsWith(ADMISSION),
      ) as unknown as Named<never>[]
    this.policies = of('ValidatingAdmissionPolicy')
    this.bindings = of('ValidatingAdmissionPolicyBinding')
  }

  /** Every CEL expression of every policy, with where it is: for a check that each one parses. */
  expressions(): { where: string; expression: string }[] {
    return this.policies.flatMap(({ metadata: { name }, spec }) => [
      ...(spec.matchConditions ?? []).map((c) => ({
        where: `${name} matchCondition ${c.name}`,
        expression: c.expression,
      })),
      ...(spec.variables ?? []).map((v) => ({ where: `${name} variable ${v.name}`, expression: v.expression })),
      ...(spec.validations ?? []).flatMap((v, i) => [
        { where: `${name} validation ${i}`, expression: v.expression },
        ...(v.messageExpression === undefined
          ? []
          : [{ where: `${name} validation ${i} messageExpression`, expression: v.messageExpression }]),
      ]),
    ])
  }

  admit(a: AdmissionAttempt): AdmissionVerdict {
    const stored = [...this.#objects, ...(a.stored ?? [])]
    const rbac = new Rbac(stored)
    const name = a.name ?? String(((a.object ?? a.oldObject)?.metadata as Json | undefined)?.name ?? '')
    const namespaceObject =
      a.namespace === undefined
        ? null
        : (a.namespaceObject ?? {
            apiVersion: 'v1',
            kind: 'Namespace',
            metadata: { name: a.namespace, labels: { 'kubernetes.io/metadata.name': a.namespace } },
          })
    const decisions: PolicyDecision[] = []
    for (const policy of this.policies) {
      if (!this.#matches(policy.spec.matchConstraints, a, name, namespaceObject, true)) continue
      for (const binding of this.bindings.filter((b) => b.spec.policyName === policy.metadata.name)) {
        if (!this.#matches(binding.spec.matchResources, a, name, namespaceObject, false)) continue
        const failClosed = (policy.spec.failurePolicy ?? 'Fail') === 'Fail'
        const configError = (message: string) => {
          if (failClosed)
            decisions.push({
              policy: policy.metadata.name,
              binding: binding.metadata.name,
              action: 'Deny',
              reason: 'Invalid',
              message: `failed to configure binding: ${message}`,
              error: true,
            })
        }
        let params: (Json | null)[]
        try {
          params = this.#params(policy.spec, binding.spec, a, stored)
        } catch (error) {
          configError((error as Error).message)
          continue
        }
        for (const param of params) {
          for (const found of this.#validate(policy.spec, a, name, param, namespaceObject, rbac)) {
            for (const action of binding.spec.validationActions ?? []) {
              decisions.push({
                policy: policy.metadata.name,
                binding: binding.metadata.name,
                action: action as PolicyDecision['action'],
                ...found,
              })
            }
          }
        }
      }
    }
    const denials = decisions.filter((d) => d.action === 'Deny')
    const warnings = decisions
      .filter((d) => d.action === 'Warn')
      .map(
        (d) =>
          `Validation failed for ValidatingAdmissionPolicy '${d.policy}' with binding '${d.binding}': ${d.message}`,
      )
    const first = denials[0]
    if (first === undefined)
      return { allowed: true, code: undefined, reason: undefined, message: undefined, decisions, warnings }
    return {
      allowed: false,
      code: REASON_CODES[first.reason] ?? 422,
      reason: first.reason,
      message: `ValidatingAdmissionPolicy '${first.policy}' with binding '${first.binding}' denied request: ${first.message}`,
      decisions,
      warnings,
    }
  }

  #matches(
    match: MatchResources | undefined,
    a: AdmissionAttempt,
    name: string,
    namespaceObject: Json | null,
    policy: boolean,
  ): boolean {
    if (match === undefined) return !policy
    const rules = match.resourceRules ?? []
    // A binding without resourceRules narrows nothing; a policy without any matches nothing.
    if (rules.length === 0 ? policy : !rules.some((rule) => ruleMatches(rule, a, name))) return false
    if ((match.excludeResourceRules ?? []).some((rule) => ruleMatches(rule, a, name))) return false
    const isNamespace = a.resource.group === '' && a.resource.resource === 'namespaces'
    const namespaceLabels = isNamespace ? labelsOf(a.object ?? a.oldObject) : labelsOf(namespaceObject)
    if ((isNamespace || a.namespace !== undefined) && !selects(match.namespaceSelector, namespaceLabels)) return false
    if (match.objectSelector !== undefined) {
      const candidates = [a.object, a.oldObject].filter((o): o is Json => o !== undefined)
      if (!candidates.some((object) => selects(match.objectSelector, labelsOf(object)))) return false
    }
    return true
  }

  #scopeOf(apiVersion: string, kind: string): 'Namespaced' | 'Cluster' {
    const builtin = BUILTIN_SCOPE[`${apiVersion}/${kind}`]
    if (builtin !== undefined) return builtin
    const group = apiVersion.split('/')[0]
    const crd = this.#objects.find((object) => {
      const spec = object.spec as { group?: string; names?: { kind?: string } } | undefined
      return object.kind === 'CustomResourceDefinition' && spec?.group === group && spec?.names?.kind === kind
    })
    if (crd === undefined) throw new Error(`paramKind kind \`${kind}.${apiVersion}\` not known`)
    return (crd.spec as { scope: 'Namespaced' | 'Cluster' }).scope
  }

  #params(policy: PolicySpec, binding: BindingSpec, a: AdmissionAttempt, stored: readonly Json[]): (Json | null)[] {
    const kind = policy.paramKind
    const ref = binding.paramRef
    if (kind === undefined || ref === undefined) return [null]
    const scope = this.#scopeOf(kind.apiVersion, kind.kind)
    if (scope === 'Cluster' && ref.namespace !== undefined)
      throw new Error('paramRef.namespace must not be provided for a cluster-scoped `paramKind`')
    const namespace = scope === 'Namespaced' ? (ref.namespace ?? a.namespace) : undefined
    if (scope === 'Namespaced' && namespace === undefined)
      throw new Error('cannot use namespaced paramRef in policy binding that matches cluster-scoped resources')
    const candidates = stored.filter((object) => {
      const metadata = object.metadata as { namespace?: string }
      return object.apiVersion === kind.apiVersion && object.kind === kind.kind && metadata.namespace === namespace
    })
    const params =
      ref.name !== undefined
        ? candidates.filter((object) => (object.metadata as { name?: string }).name === ref.name)
        : candidates.filter((object) => selects(ref.selector ?? {}, labelsOf(object)))
    if (params.length === 0 && ref.parameterNotFoundAction === 'Deny')
      throw new Error('no params found for policy binding with `Deny` parameterNotFoundAction')
    return params
  }

  #validate(
    policy: PolicySpec,
    a: AdmissionAttempt,
    name: string,
    param: Json | null,
    namespaceObject: Json | null,
    rbac: Rbac,
  ): Omit<PolicyDecision, 'policy' | 'binding' | 'action'>[] {
    const failClosed = (policy.failurePolicy ?? 'Fail') === 'Fail'
    const failed = (message: string) => (failClosed ? [{ reason: 'Invalid', message, error: true }] : [])
    const request = {
      uid: 'admission-harness',
      kind: kindOf(a),
      resource: a.resource,
      subResource: a.subresource ?? '',
      requestKind: kindOf(a),
      requestResource: a.resource,
      requestSubResource: a.subresource ?? '',
      name,
      namespace: a.namespace ?? '',
      operation: a.operation,
      userInfo: {
        username: a.user.username,
        uid: a.user.uid ?? '',
        groups: a.user.groups ?? [],
        extra: a.user.extra ?? {},
      },
      dryRun: a.dryRun ?? false,
    }
    const authorizer = new Authorizer(
      a.user,
      (user, attributes) => rbac.authorize(user, attributes),
      new ResourceCheck(undefined, a.resource.group, a.resource.resource, a.subresource ?? '', a.namespace ?? '', name),
    )
    authorizer.requestResource.authorizer = authorizer
    const base = {
      object: toCel(a.object ?? null),
      oldObject: toCel(a.oldObject ?? null),
      request: toCel(request),
      params: toCel(param),
    }
    // matchConditions: no namespaceObject and no variables, as the API server evaluates them.
    const errors: string[] = []
    for (const condition of policy.matchConditions ?? []) {
      try {
        if (evaluate(condition.expression, { ...base, authorizer }) === false) return []
      } catch (error) {
        errors.push((error as Error).message)
      }
    }
    if (errors.length > 0) return failed(errors.length === 1 ? (errors[0] as string) : `[${errors.join(', ')}]`)
    const withAuthorizer = { ...base, namespaceObject: toCel(namespaceObject), authorizer } as Json
    withAuthorizer.variables = lazyVariables(policy.variables ?? [], withAuthorizer)
    const withoutAuthorizer = { ...base, namespaceObject: toCel(namespaceObject) } as Json
    withoutAuthorizer.variables = lazyVariables(policy.variables ?? [], withoutAuthorizer)
    const decisions: Omit<PolicyDecision, 'policy' | 'binding' | 'action'>[] = []
    for (const validation of policy.validations ?? []) {
      let result: unknown
      try {
        result = evaluate(validation.expression, withAuthorizer)
      } catch (error) {
        decisions.push(...failed((error as Error).message))
        continue
      }
      if (result === true) continue
      decisions.push({
        reason: validation.reason ?? 'Invalid',
        message: messageOf(validation, withoutAuthorizer),
        error: false,
      })
    }
    return decisions
  }
}

function kindOf(a: AdmissionAttempt): { group: string; version: string; kind: string } {
  const object = a.object ?? a.oldObject
  return { group: a.resource.group, version: a.resource.version, kind: String(object?.kind ?? '') }
}

function evaluate(expression: string, activation: Json): unknown {
  try {
    return kubernetesCel.evaluate(expression, activation)
  } catch (error) {
    if (error instanceof ExpressionError) throw error
    throw new ExpressionError(
      `expression '${expression}' resulted in error: ${(error as Error).message.split('\n')[0]}`,
    )
  }
}

/**
 * `variables`: each evaluated when first read and then kept (a failure too), shared by every expression of one
 * evaluation; each sees only the variables before it, as the API server compiles them in order.
 */
function lazyVariables(variables: readonly (Expression & { name: string })[], activation: Json): Json {
  const outcomes = new Map<string, { value: unknown } | { error: unknown }>()
  const view = (count: number): Json => {
    const values: Json = {}
    for (const [index, variable] of variables.slice(0, count).entries()) {
      Object.defineProperty(values, variable.name, {
        enumerable: true,
        get() {
          let outcome = outcomes.get(variable.name)
          if (outcome === undefined) {
            try {
              outcome = {
                value: kubernetesCel.evaluate(variable.expression, { ...activation, variables: view(index) }),
              }
            } catch (error) {
              outcome = { error }
            }
            outcomes.set(variable.name, outcome)
          }
          if ('error' in outcome) throw outcome.error
          return outcome.value
        },
      })
    }
    return values
  }
  return view(variables.length)
}

function messageOf(validation: Validation, activation: Json): string {
  if (validation.messageExpression !== undefined) {
    try {
      const value = kubernetesCel.evaluate(validation.messageExpression, activation) as unknown
      if (typeof value === 'string') {
        const message = value.trim()
        if (message !== '' && message.length <= 5000 && !message.includes('\n')) return message
      }
    } catch {
      // The API server logs a failing messageExpression and falls back to the message.
    }
  }
  const message = validation.message?.trim() ?? ''
  return message !== '' ? message : `failed expression: ${validation.expression.trim()}`
}
