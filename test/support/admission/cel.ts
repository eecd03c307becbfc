/**
 * CEL as the Kubernetes API server runs it in an admission policy, on @marcbachmann/cel-js (docs/development.md says
 * why that library): the bindings `object`, `oldObject`, `request`, `params`, `namespaceObject` and `variables`
 * (dynamically typed, as the API server types them from schemas this harness does not hold), optional types
 * (`obj.?field`), and Kubernetes' `authorizer` library as types with receiver methods:
 *
 *   authorizer.group(g).resource(r).subresource(s).namespace(ns).name(n).check(verb).allowed()
 *   authorizer.path(p).check(verb) · authorizer.serviceAccount(ns, name) · authorizer.requestResource
 *   Decision: allowed(), reason(), errored(), error()
 *
 * The library has the CEL standard functions and macros (has, all, exists, exists_one, filter, map, size, matches,
 * startsWith, endsWith, contains, ...) and most of Kubernetes' strings library (lowerAscii, upperAscii, split, join,
 * substring, indexOf, trim, ...). What a policy needs of Kubernetes' libraries beyond that is added below (replace,
 * find, findAll); a policy calling anything else fails to evaluate here, naming the missing overload: add it.
 *
 * Values: JSON integers become CEL ints (BigInt), as the API server types integer fields; other numbers are doubles.
 */
import { Environment } from '@marcbachmann/cel-js'
import type { Attributes, Authorization, User } from './rbac.js'

/** Answers an authorization check for a user, as the API server's authorizer does. */
export type Authorize = (user: User, attributes: Attributes) => Authorization

export class Authorizer {
  constructor(
    readonly user: User,
    readonly authorize: Authorize,
    /** the request's own resource, for `authorizer.requestResource` */
    readonly requestResource: ResourceCheck,
  ) {}
}

export class PathCheck {
  constructor(
    readonly authorizer: Authorizer,
    readonly path: string,
  ) {}
}

export class GroupCheck {
  constructor(
    readonly authorizer: Authorizer | undefined,
    readonly group: string,
  ) {}
}

export class ResourceCheck {
  constructor(
    /** undefined only while the Authorizer that holds it as requestResource is being built */
    public authorizer: Authorizer | undefined,
    readonly group: string,
    readonly resource: string,
    readonly subresource = '',
    readonly namespace = '',
    readonly name = '',
  ) {}

  with(change: Partial<Pick<ResourceCheck, 'subresource' | 'namespace' | 'name'>>): ResourceCheck {
    const { subresource, namespace, name } = { ...this, ...change }
    return new ResourceCheck(this.authorizer, this.group, this.resource, subresource, namespace, name)
  }
}

export class AuthorizationDecision {
  constructor(readonly decision: Authorization) {}
}

function regex(pattern: string, flags = ''): RegExp {
  return new RegExp(pattern, flags)
}

/** One environment for every expression: the bindings are declared, their values come with each evaluation. */
export const kubernetesCel = new Environment({ enableOptionalTypes: true, homogeneousAggregateLiterals: false })
  .registerType('Authorizer', Authorizer)
  .registerType('PathCheck', PathCheck)
  .registerType('GroupCheck', GroupCheck)
  .registerType('ResourceCheck', ResourceCheck)
  .registerType('AuthorizationDecision', AuthorizationDecision)
  .registerVariable('object', 'dyn')
  .registerVariable('oldObject', 'dyn')
  .registerVariable('request', 'dyn')
  .registerVariable('params', 'dyn')
  .registerVariable('namespaceObject', 'dyn')
  .registerVariable('variables', 'dyn')
  .registerVariable('authorizer', 'Authorizer')
  .registerFunction('Authorizer.path(string): PathCheck', (a: Authorizer, path: string) => new PathCheck(a, path))
  .registerFunction('Authorizer.group(string): GroupCheck', (a: Authorizer, group: string) => new GroupCheck(a, group))
  .registerFunction(
    'Authorizer.serviceAccount(string, string): Authorizer',
    (a: Authorizer, namespace: string, name: string) =>
      new Authorizer(
        {
          username: `system:serviceaccount:${namespace}:${name}`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
        },
        a.authorize,
        a.requestResource,
      ),
  )
  .registerFunction(
    'GroupCheck.resource(string): ResourceCheck',
    (g: GroupCheck, resource: string) => new ResourceCheck(g.authorizer, g.group, resource),
  )
  .registerFunction('ResourceCheck.subresource(string): ResourceCheck', (r: ResourceCheck, subresource: string) =>
    r.with({ subresource }),
  )
  .registerFunction('ResourceCheck.namespace(string): ResourceCheck', (r: ResourceCheck, namespace: string) =>
    r.with({ namespace }),
  )
  .registerFunction('ResourceCheck.name(string): ResourceCheck', (r: ResourceCheck, name: string) => r.with({ name }))
  .registerFunction('ResourceCheck.check(string): AuthorizationDecision', (r: ResourceCheck, verb: string) => {
    const authorizer = r.authorizer as Authorizer
    return new AuthorizationDecision(
      authorizer.authorize(authorizer.user, {
        verb,
        apiGroup: r.group,
        resource: r.resource,
        subresource: r.subresource,
        namespace: r.namespace,
        name: r.name,
      }),
    )
  })
  .registerFunction(
    'PathCheck.check(string): AuthorizationDecision',
    (p: PathCheck, verb: string) =>
      new AuthorizationDecision(p.authorizer.authorize(p.authorizer.user, { verb, path: p.path })),
  )
  .registerFunction('AuthorizationDecision.allowed(): bool', (d: AuthorizationDecision) => d.decision.allowed)
  .registerFunction('AuthorizationDecision.reason(): string', (d: AuthorizationDecision) => d.decision.reason)
  .registerFunction('AuthorizationDecision.errored(): bool', () => false)
  .registerFunction('AuthorizationDecision.error(): string', () => '')
  // Kubernetes' strings and regex libraries, where @marcbachmann/cel-js has no overload.
  .registerFunction('string.replace(string, string): string', (s: string, from: string, to: string) =>
    s.replaceAll(from, to),
  )
  .registerFunction('string.replace(string, string, int): string', (s: string, from: string, to: string, n: bigint) => {
    let out = s
    let done = 0n
    let at = 0
    while ((n < 0n || done < n) && from !== '' && out.indexOf(from, at) >= 0) {
      const index = out.indexOf(from, at)
      out = out.slice(0, index) + to + out.slice(index + from.length)
      at = index + to.length
      done += 1n
    }
    return out
  })
  .registerFunction('string.find(string): string', (s: string, pattern: string) => regex(pattern).exec(s)?.[0] ?? '')
  .registerFunction('string.findAll(string): list<string>', (s: string, pattern: string) =>
    [...s.matchAll(regex(pattern, 'g'))].map((match) => match[0]),
  )

/** A JSON value as the API server hands it to CEL: integers as ints (BigInt), everything else as it is. */
export function toCel(value: unknown): unknown {
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value
  if (Array.isArray(value)) return value.map(toCel)
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, toCel(item)]))
  return value
}
