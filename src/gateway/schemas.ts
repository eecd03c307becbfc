/** The gateway API's schemas (TypeBox) and their types, side by side; the OpenAPI document is made from them. */
import { Type, type Static } from '@sinclair/typebox'
import { DATE_TIME, DEFINITION_NAME, DNS_LABEL, ENV_NAME } from '../contract/patterns.js'

export const ErrorSchema = Type.Object({ error: Type.String(), message: Type.String() }, { $id: 'Error' })

const ActionSchema = Type.Object({
  allowed: Type.Boolean(),
  why: Type.Optional(Type.String({ description: 'Why not, in a sentence a player may read.' })),
})

export const OwnerSchema = Type.Object({
  kind: Type.Union([Type.Literal('User'), Type.Literal('Team')]),
  id: Type.String(),
})

export const InstanceSchema = Type.Object(
  {
    name: Type.String({ description: 'The Challenge: `<definition>-<16 hex of SHA-256 over [kind, id]>`.' }),
    namespace: Type.String(),
    definition: Type.String(),
    owner: OwnerSchema,
    phase: Type.String({ description: 'Pending, Running, Error, Deleted, Terminating; None before the first status.' }),
    reason: Type.Optional(Type.String()),
    message: Type.Optional(Type.String({ description: 'One sentence a player may read.' })),
    endpoint: Type.Optional(
      Type.Object({
        type: Type.String(),
        host: Type.String(),
        port: Type.Integer(),
        url: Type.Optional(Type.String()),
      }),
    ),
    command: Type.Optional(
      Type.String({ description: 'What to paste: the URL, `ncat --ssl host port` or `nc host port`.' }),
    ),
    expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
    renewals: Type.Object({ applied: Type.Integer(), max: Type.Integer() }),
    actions: Type.Object({ renew: ActionSchema, restart: ActionSchema, stop: ActionSchema }),
    budget: Type.Object({ held: Type.Number(), total: Type.Integer() }),
    queuePosition: Type.Optional(Type.Integer({ minimum: 1 })),
    steps: Type.Optional(
      Type.Array(Type.Object({ step: Type.String(), done: Type.Boolean() }), {
        description:
          'While an admitted instance is Pending: Admitted, Scheduled, ContainersStarted, WorkloadReady, EndpointReady, each done or not.',
      }),
    ),
    version: Type.Optional(Type.String({ description: "The record's resourceVersion: the events stream's event id." })),
  },
  { $id: 'Instance' },
)

export const DefinitionParams = Type.Object({
  definition: Type.String({ pattern: DEFINITION_NAME, maxLength: 63, description: 'The ChallengeDefinition.' }),
})
export type DefinitionParams = Static<typeof DefinitionParams>

export const NamespaceQuery = Type.Object(
  {
    namespace: Type.Optional(
      Type.String({
        pattern: DNS_LABEL,
        maxLength: 63,
        description: "One of the platform's namespaces; default its first.",
      }),
    ),
  },
  { additionalProperties: false },
)
export type NamespaceQuery = Static<typeof NamespaceQuery>

/**
 * What a platform's backend may set on the Challenge it ensures (a player's token may not: it would let a player
 * choose their own lifetime or the environment of the author's containers). The CRD checks the rest (the total size
 * of the parameters, names it refuses); the gateway maps its refusal to a 400.
 */
export const EnsureBody = Type.Object(
  {
    deadline: Type.Optional(
      Type.String({
        pattern: DATE_TIME,
        description: "spec.deadline: the instance ends then at the latest (the platform's `deadline` when earlier).",
      }),
    ),
    lifetimeSeconds: Type.Optional(
      Type.Integer({ minimum: 60, maximum: 86400, description: "spec.lifetimeSeconds: instead of the definition's." }),
    ),
    parameters: Type.Optional(
      Type.Record(Type.String({ pattern: ENV_NAME }), Type.String(), {
        maxProperties: 16,
        additionalProperties: false,
        description: 'spec.parameters: passed to every container as environment variables.',
      }),
    ),
  },
  { additionalProperties: false },
)
export type EnsureBody = Static<typeof EnsureBody>

export const VerifyBody = Type.Object(
  {
    definition: DefinitionParams.properties.definition,
    flag: Type.String({ maxLength: 1024 }),
    owner: Type.Optional(
      Type.String({
        maxLength: 80,
        description: '`<kind>:<id>`; a platform key names the owner here or in Challenge-Owner; a token: its own only.',
      }),
    ),
    stopOnCorrect: Type.Optional(
      Type.Boolean({ description: 'A correct flag stops the instance (stopReason Solved).' }),
    ),
  },
  { additionalProperties: false },
)
export type VerifyBody = Static<typeof VerifyBody>

export const VerifyAnswer = Type.Object({
  result: Type.Union([
    Type.Literal('correct'),
    Type.Literal('incorrect'),
    Type.Literal('anotherOwner'),
    Type.Literal('unverifiable'),
  ]),
  owner: Type.Optional(OwnerSchema),
  message: Type.Optional(Type.String()),
})

export const DefinitionList = Type.Array(
  Type.Object({
    name: Type.String(),
    flagMode: Type.String({ description: 'PerOwner, PerInstance or Static (Static flags the platform checks)' }),
  }),
)
