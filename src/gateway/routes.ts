/**
 * The API's routes under /v1. A handler authenticates (onRequest, before the body is read), resolves the scope
 * (namespace and owner), and hands over to ./instances.ts; one audit line per call that changes something says who,
 * what and the result.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { authenticate, namespaceOf, OWNER_HEADER, type Caller, type Platform } from './identity.js'
import { GatewayError, type Instances, type Scope } from './instances.js'
import type { GatewayCache } from './cache.js'
import { streamEvents, type StreamOptions } from './events.js'
import { readTime } from '../challenge/time.js'
import { ownerText, parseOwner, sameOwner } from './names.js'
import {
  DefinitionList,
  DefinitionParams,
  EnsureBody,
  ErrorSchema,
  InstanceSchema,
  NamespaceQuery,
  VerifyAnswer,
  VerifyBody,
} from './schemas.js'

export interface RouteOptions extends StreamOptions {
  operations: Instances
  /** The shared watches the events streams follow. */
  cache: GatewayCache
  platforms: readonly Platform[]
  audience: string
  rateLimit: number
  now: () => Date
}

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | undefined
    /** What the audit line says was asked for: `renew web-login`. */
    audit: string | undefined
  }
}

const errors = {
  400: ErrorSchema,
  401: ErrorSchema,
  403: ErrorSchema,
  404: ErrorSchema,
  409: ErrorSchema,
  429: ErrorSchema,
  503: ErrorSchema,
}

/** The namespace a call acts in: the platform's first, or the one `?namespace=` names when it is the platform's. */
function namespaceFor(request: FastifyRequest<{ Querystring: NamespaceQuery }>): string {
  const namespace = namespaceOf(request.caller as Caller, request.query.namespace)
  if ('statusCode' in namespace) throw new GatewayError(namespace.statusCode, namespace.message)
  return namespace.namespace
}

function scopeOf(request: FastifyRequest<{ Querystring: NamespaceQuery }>, owner = request.caller?.owner): Scope {
  const namespace = namespaceFor(request)
  if (owner === undefined)
    throw new GatewayError(400, 'Name the owner: the header Challenge-Owner: <kind>:<id> (User or Team).')
  return { namespace, owner }
}

/**
 * The earlier of the body's deadline `asked` and the platform's, as the API server reads them; either may be
 * missing. One the API server would not read is kept, for it to refuse by name.
 */
function earliest(asked: string | undefined, platform: string | undefined): string | undefined {
  if (asked === undefined || platform === undefined) return asked ?? platform
  const [mine, theirs] = [readTime(asked), readTime(platform) as number]
  return mine === undefined || mine <= theirs ? asked : platform
}

export async function gatewayRoutes(app: FastifyInstance, options: RouteOptions): Promise<void> {
  const { operations, cache, platforms, audience, now } = options
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>()
  v1.decorateRequest('caller', undefined)
  v1.decorateRequest('audit', undefined)

  v1.addHook('onRequest', async (request, reply) => {
    const caller = await authenticate(
      // Node joins a repeated header of this kind into one string.
      {
        authorization: request.headers.authorization,
        ownerHeader: request.headers[OWNER_HEADER] as string | undefined,
      },
      platforms,
      audience,
      now(),
    )
    if ('statusCode' in caller) {
      if (caller.statusCode === 401) reply.header('www-authenticate', 'Bearer')
      return reply
        .code(caller.statusCode)
        .send({ error: caller.statusCode === 401 ? 'Unauthorized' : 'Forbidden', message: caller.message })
    }
    request.caller = caller
  })
  v1.addHook('onResponse', async (request, reply) => {
    if (request.audit === undefined) return
    const caller = request.caller
    request.log.info(
      {
        audit: {
          platform: caller?.platform.name,
          via: caller?.via,
          owner: caller?.owner === undefined ? undefined : ownerText(caller.owner),
          namespace: (request.query as NamespaceQuery).namespace ?? caller?.platform.namespaces[0],
          action: request.audit,
          statusCode: reply.statusCode,
        },
      },
      'audit',
    )
  })

  const changing = { rateLimit: { max: options.rateLimit, timeWindow: '1 minute' } }
  const audited = (what: (request: FastifyRequest) => string) => async (request: FastifyRequest) => {
    request.audit = what(request)
  }
  const definitionOf = (request: FastifyRequest) => (request.params as DefinitionParams).definition
  const one = { params: DefinitionParams, querystring: NamespaceQuery }

  v1.put(
    '/v1/instances/:definition',
    {
      schema: {
        ...one,
        body: EnsureBody,
        summary: "Ensure: the caller's instance, created if there is none",
        response: { 200: InstanceSchema, 201: InstanceSchema, ...errors },
      },
      config: changing,
      onRequest: audited((request) => `ensure ${definitionOf(request)}`),
      // A PUT without a body asks for the platform's settings alone.
      preValidation: async (request) => {
        request.body ??= {}
      },
    },
    async (request, reply) => {
      const caller = request.caller as Caller
      const asked = Object.keys(request.body)
      if (asked.length > 0 && caller.via === 'token' && !caller.admin)
        throw new GatewayError(
          403,
          `A player's token may not set ${asked.join(', ')}: only the platform's backend (a key, or an admin token) may.`,
        )
      const deadline = earliest(request.body.deadline, caller.platform.deadline)
      const { created, view } = await operations.ensure(scopeOf(request), request.params.definition, {
        ...request.body,
        ...(deadline === undefined ? {} : { deadline }),
      })
      return reply.code(created ? 201 : 200).send(view)
    },
  )
  v1.get(
    '/v1/instances',
    {
      schema: {
        querystring: NamespaceQuery,
        summary: "The caller's instances",
        response: { 200: Type.Array(InstanceSchema), ...errors },
      },
    },
    async (request) => operations.list(scopeOf(request)),
  )
  v1.get(
    '/v1/definitions',
    {
      schema: {
        querystring: NamespaceQuery,
        summary: "The namespace's ChallengeDefinitions (a platform key only: for a platform's admin form)",
        response: { 200: DefinitionList, ...errors },
      },
    },
    async (request) => {
      if ((request.caller as Caller).via !== 'key')
        throw new GatewayError(403, 'Only a platform key lists the definitions.')
      return operations.definitions(namespaceFor(request))
    },
  )
  v1.get(
    '/v1/instances/:definition',
    { schema: { ...one, summary: "The caller's instance", response: { 200: InstanceSchema, ...errors } } },
    async (request) => operations.get(scopeOf(request), request.params.definition),
  )
  for (const action of ['renew', 'restart', 'stop'] as const) {
    v1.post(
      `/v1/instances/:definition/${action}`,
      {
        schema: {
          ...one,
          summary: `${action[0]?.toUpperCase()}${action.slice(1)}`,
          response: { 202: InstanceSchema, ...errors },
        },
        config: changing,
        onRequest: audited((request) => `${action} ${definitionOf(request)}`),
      },
      async (request, reply) =>
        reply.code(202).send(await operations[action](scopeOf(request), request.params.definition)),
    )
  }
  v1.delete(
    '/v1/instances/:definition',
    {
      schema: {
        ...one,
        summary: 'Delete the record (the teardown follows)',
        response: { 202: Type.Object({ deleted: Type.String() }), ...errors },
      },
      config: changing,
      onRequest: audited((request) => `delete ${definitionOf(request)}`),
    },
    async (request, reply) => {
      const scope = scopeOf(request)
      await operations.remove(scope, request.params.definition)
      return reply.code(202).send({ deleted: request.params.definition })
    },
  )
  v1.get(
    '/v1/instances/:definition/events',
    {
      schema: {
        ...one,
        summary: 'Server-Sent Events: the instance at each change of its status',
        produces: ['text/event-stream'],
        response: { ...errors },
      },
    },
    async (request, reply) =>
      streamEvents(request, reply, operations, cache, scopeOf(request), request.params.definition, options),
  )
  v1.post(
    '/v1/flags/verify',
    {
      schema: {
        querystring: NamespaceQuery,
        body: VerifyBody,
        summary: 'Check a submitted flag',
        response: { 200: VerifyAnswer, ...errors },
      },
      config: changing,
      onRequest: audited(() => 'verify'),
      preHandler: async (request) => {
        request.audit = `verify ${request.body.definition}`
      },
    },
    async (request) => {
      const caller = request.caller as Caller
      const { definition, flag, owner, stopOnCorrect } = request.body
      let named = caller.owner
      if (owner !== undefined) {
        const parsed = parseOwner(owner)
        if ('problem' in parsed) throw new GatewayError(400, `body.owner ${parsed.problem}`)
        if (caller.via === 'token' && !caller.admin && !sameOwner(parsed.owner, caller.owner))
          throw new GatewayError(
            403,
            `This token acts for ${ownerText(caller.owner as never)} only; body.owner names ${owner}.`,
          )
        named = parsed.owner
      }
      const answer = await operations.verify(scopeOf(request, named), definition, flag, stopOnCorrect === true)
      request.log.info({ audit: { flag: answer.result, definition } }, 'flag checked')
      // A player is not told whose flag they hold: only the platform is.
      if (answer.result === 'anotherOwner' && !caller.admin) return { result: 'incorrect' as const }
      return answer
    },
  )
}
