/**
 * Metacontroller's hook protocol (CompositeController, hook versions v1 and v2): the requests it POSTs and the
 * answers it accepts: Metacontroller's CompositeController reference
 * (https://metacontroller.github.io/metacontroller/api/compositecontroller.html), and docs/design.md for how this
 * project uses it.
 *
 * Kubernetes objects stay open at every level (`additionalProperties: true`): nothing a caller sends is
 * stripped, and nothing we answer loses a field on the way out. Only what the hook relies on is checked.
 */
import { Type, type Static } from '@sinclair/typebox'
import { ChallengeSpecSchema } from './api.js'
import { NON_EMPTY_LABEL_VALUE } from './patterns.js'

const Open = { additionalProperties: true } as const
/**
 * Any key. `Type.Record(Type.String(), …)` compiles to the pattern `^(.*)$`, which a key holding a line break
 * does not match: such a key escaped validation and its unchecked value reached the hook (a 500).
 */
const AnyKey = Type.RegExp(/^[\s\S]*$/)
const StringMap = Type.Record(AnyKey, Type.String())

export const ObjectMetaSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 253 }),
    namespace: Type.Optional(Type.String()),
    uid: Type.Optional(Type.String()),
    generation: Type.Optional(Type.Integer()),
    labels: Type.Optional(StringMap),
    annotations: Type.Optional(StringMap),
    creationTimestamp: Type.Optional(Type.String()),
    deletionTimestamp: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  },
  Open,
)

/** Any Kubernetes object, as observed. */
export const KubeObjectSchema = Type.Object(
  { apiVersion: Type.Optional(Type.String()), kind: Type.Optional(Type.String()), metadata: ObjectMetaSchema },
  Open,
)
/** Open: any other field (spec, status, data, ...) is there as observed, typed `unknown` until checked. */
export type KubeObject = Static<typeof KubeObjectSchema> & { [field: string]: unknown }

/** The parent as Metacontroller sends it: a whole Challenge, status and finalizers included. */
export const ChallengeObjectSchema = Type.Object(
  {
    apiVersion: Type.Optional(Type.String()),
    kind: Type.Optional(Type.String()),
    metadata: Type.Object(
      {
        ...ObjectMetaSchema.properties,
        namespace: Type.String({ minLength: 1 }),
        // Also the value of the pods' uid label (names.ts): the API server's uids always are label values.
        uid: Type.String({ pattern: NON_EMPTY_LABEL_VALUE }),
      },
      Open,
    ),
    spec: ChallengeSpecSchema,
    // Our own previous answer; read defensively (status.ts), never trusted to be well formed.
    status: Type.Optional(Type.Union([Type.Object({}, Open), Type.Null()])),
  },
  Open,
)
export type ChallengeObject = Static<typeof ChallengeObjectSchema>

/**
 * Children and related objects: `{"<Kind>.<apiVersion>": {"<name>" | "<namespace>/<name>": object}}`.
 * The inner keys differ between hook versions, so objects are indexed by their own metadata (observed.ts).
 */
export const ObjectGroupsSchema = Type.Record(AnyKey, Type.Record(AnyKey, KubeObjectSchema))
export type ObjectGroups = Record<string, Record<string, KubeObject>>

export const SyncRequestSchema = Type.Object(
  {
    controller: Type.Optional(Type.Object({}, Open)),
    parent: ChallengeObjectSchema,
    children: Type.Optional(ObjectGroupsSchema),
    related: Type.Optional(ObjectGroupsSchema),
    finalizing: Type.Optional(Type.Boolean()),
  },
  Open,
)
export type SyncRequest = Static<typeof SyncRequestSchema>

export const CustomizeRequestSchema = Type.Object(
  { controller: Type.Optional(Type.Object({}, Open)), parent: ChallengeObjectSchema },
  Open,
)
export type CustomizeRequest = Static<typeof CustomizeRequestSchema>

/**
 * The warm pool's controller (challenge-hooks-pools): its parent is a ChallengeDefinition, whose spec the hook checks
 * itself (definition.ts) and answers with status.pool whatever it holds, so the request checks only its shape.
 */
export const DefinitionObjectSchema = Type.Object(
  {
    apiVersion: Type.Optional(Type.String()),
    kind: Type.Optional(Type.String()),
    metadata: Type.Object(
      { ...ObjectMetaSchema.properties, namespace: Type.String({ minLength: 1 }), uid: Type.String({ minLength: 1 }) },
      Open,
    ),
    spec: Type.Object({}, Open),
    status: Type.Optional(Type.Union([Type.Object({}, Open), Type.Null()])),
  },
  Open,
)
export type DefinitionObject = Static<typeof DefinitionObjectSchema>

export const PoolSyncRequestSchema = Type.Object(
  {
    controller: Type.Optional(Type.Object({}, Open)),
    parent: DefinitionObjectSchema,
    children: Type.Optional(ObjectGroupsSchema),
    related: Type.Optional(ObjectGroupsSchema),
    finalizing: Type.Optional(Type.Boolean()),
  },
  Open,
)
export type PoolSyncRequest = Static<typeof PoolSyncRequestSchema>

export const PoolCustomizeRequestSchema = Type.Object(
  { controller: Type.Optional(Type.Object({}, Open)), parent: DefinitionObjectSchema },
  Open,
)
export type PoolCustomizeRequest = Static<typeof PoolCustomizeRequestSchema>

/** A desired child: never status, ownerReferences, resourceVersion or uid (Metacontroller owns those). */
export interface DesiredChild {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
  [field: string]: unknown
}

/**
 * The answer. Its top level holds exactly these four fields: v2 hooks default to strict unmarshalling, where
 * any other field is an error. `children` is always the complete desired set (missing means "delete all").
 */
export interface SyncResponse {
  status: Record<string, unknown>
  children: DesiredChild[]
  resyncAfterSeconds?: number
  finalized?: boolean
}

export const SyncResponseSchema = Type.Object(
  {
    status: Type.Object({}, Open),
    children: Type.Array(
      Type.Object(
        {
          apiVersion: Type.String(),
          kind: Type.String(),
          metadata: Type.Object({ name: Type.String() }, Open),
        },
        Open,
      ),
    ),
    resyncAfterSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    finalized: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)

export interface LabelSelector {
  matchLabels?: Record<string, string>
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[]
}

export interface RelatedResourceRule {
  apiVersion: string
  resource: string
  labelSelector?: LabelSelector
  namespace?: string
  names?: string[]
}

export interface CustomizeResponse {
  relatedResources: RelatedResourceRule[]
}

export const CustomizeResponseSchema = Type.Object(
  {
    relatedResources: Type.Array(
      Type.Object(
        {
          apiVersion: Type.String(),
          resource: Type.String(),
          labelSelector: Type.Optional(Type.Object({}, Open)),
          namespace: Type.Optional(Type.String()),
          names: Type.Optional(Type.Array(Type.String())),
        },
        Open,
      ),
    ),
  },
  { additionalProperties: false },
)

/** Every 4xx carries this body: `error` is the HTTP status text, `message` names what is wrong. */
export const ErrorBodySchema = Type.Object({ error: Type.String(), message: Type.String() })
export type ErrorBody = Static<typeof ErrorBodySchema>
