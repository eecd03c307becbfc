/**
 * The public Challenge API (challenge-hooks.dev/v1alpha1): names, phases, reasons, labels, defaults and the
 * schemas of the two custom resources' specs. Every string here is part of the public contract documented in
 * docs/api.md; change none of them.
 */
import { Type, type Static } from '@sinclair/typebox'
import {
  DATE_TIME,
  DEFINITION_NAME,
  DNS_LABEL,
  DNS_SUBDOMAIN,
  ENV_NAME,
  PORT_NAME,
  QUANTITY,
  RESOURCE_NAME,
  SECRET_KEY,
} from './patterns.js'

/** Patterns of the schemas below, also read by the tests and the error messages (./patterns.ts has them all). */
export { DATE_TIME, ENV_NAME }

export const GROUP = 'challenge-hooks.dev'
export const VERSION = 'v1alpha1'
export const API_VERSION = `${GROUP}/${VERSION}`

export const Label = {
  managedBy: 'app.kubernetes.io/managed-by',
  instance: 'challenge-hooks.dev/instance',
  /** The Challenge's uid, on its children and pods: selectors require it, so they match only this Challenge's pods. */
  uid: 'challenge-hooks.dev/uid',
  owner: 'challenge-hooks.dev/owner',
  /**
   * With `owner`, on the pods an owner's own tools run in (a player's workstation the platform starts for them):
   * what an Internal instance admits. The hook never writes it; the instances' own pods carry neither.
   */
  ownerKind: 'challenge-hooks.dev/owner-kind',
  definition: 'challenge-hooks.dev/definition',
  /** On a warm pool's pod: its number in the pool (`<definition>.pool-<n>`), a label value where the name may not be. */
  poolSlot: 'challenge-hooks.dev/pool-slot',
  /** On a warm pool's pod: 10 hex of the pod's rendering; a free pod of another rendering is drained, never claimed. */
  poolRendering: 'challenge-hooks.dev/pool-rendering',
  /** On a warm pool's pod, once claimed, forever: the uid of the Challenge it serves. */
  claimedBy: 'challenge-hooks.dev/claimed-by',
  /** On the pods of a definition's pre-pull DaemonSet (`<definition>.images`): the definition's name. */
  prepull: 'challenge-hooks.dev/prepull',
  /**
   * On the Service of a run served from a warm pool, while it waits or is claimed: the definition's name. The pool
   * relates these Services, not the Challenges (docs/api.md#warm-pools).
   */
  poolTicket: 'challenge-hooks.dev/pool-ticket',
} as const
export const MANAGED_BY = 'challenge-hooks'

/**
 * The child rules of the CompositeController (manifests/compositecontroller.yaml), as Metacontroller names their
 * groups in a request: one group per rule, `{}` when empty. A routing component adds its route's (src/challenge/traffic-routes.ts).
 * Deployments are the workload of earlier releases: the rule stays so that an upgrade deletes them.
 */
export const CHILD_GROUPS = [
  'Secret.v1',
  'NetworkPolicy.networking.k8s.io/v1',
  'Pod.v1',
  'Deployment.apps/v1',
  'Service.v1',
  'Ingress.networking.k8s.io/v1',
] as const

/** The run number, on the Pod (a new run rolls the workload) and on the Service (whose instants are that run's). */
export const RUN_ANNOTATION = 'challenge-hooks.dev/run'

export const Annotation = {
  /** On a ChallengeDefinition: its author's user name (the admission policies hold it to the creator). */
  author: 'challenge-hooks.dev/author',
  /**
   * On a Challenge, set by an operator only (admission-policy.yaml): the definition's new author, whom the instance
   * may now run with (status.definitionAuthor).
   */
  acceptDefinitionAuthor: 'challenge-hooks.dev/accept-definition-author',
  /** On a warm pool's pod: the uid of its flag Secret, what its PerInstance flag is made from (status.pool.flagUid). */
  flagUid: 'challenge-hooks.dev/flag-uid',
  /** On a pooled run's Service (its ticket): status.pool.state, Waiting or Claimed. */
  poolState: 'challenge-hooks.dev/pool-state',
  /** On a claimed run's Service: status.pool.pod. */
  poolPod: 'challenge-hooks.dev/pool-pod',
  /**
   * On an admitted run's Service: status.admittedAt, which orders the pool's claimants, and which a sync whose view of
   * the Challenge lags reads from there (docs/api.md, "The Service records the run's instants").
   */
  admittedAt: 'challenge-hooks.dev/admitted-at',
  /** On a claimed run's Service: status.pool.since, read back as admitted-at is. */
  poolSince: 'challenge-hooks.dev/pool-since',
} as const

/** How a Challenge's run is served by its definition's warm pool (status.pool.state). */
export const ServedBy = {
  /** Admitted, asking the pool for a pod since status.pool.since. */
  Waiting: 'Waiting',
  /** Served by the pooled pod status.pool.pod for the rest of the run. */
  Claimed: 'Claimed',
  /** A pod of its own, as without a pool. */
  Cold: 'Cold',
  /** A run served by a pooled pod that has ended: the pool deletes the pod. */
  Released: 'Released',
} as const
export type ServedBy = (typeof ServedBy)[keyof typeof ServedBy]

/** A definition's warm pool as its status says it (status.pool.state), written only when it changes. */
export const PoolState = {
  /** Free or starting pods: a new Challenge may wait for one. */
  Ready: 'Ready',
  /** No free or starting pod: maxPods reached. New Challenges start cold at once. */
  Exhausted: 'Exhausted',
  /** Past availableUntil: no free pod is kept. */
  Closed: 'Closed',
  /** No pool, or the definition is invalid (the message says why). */
  Off: 'Off',
} as const
export type PoolState = (typeof PoolState)[keyof typeof PoolState]

/** Whether a definition's images are pulled onto the nodes ahead of time (spec.prepull), and whether instances wait. */
export const PrepullMode = {
  Off: 'Off',
  /** Pulled ahead of time; an instance never waits for it. */
  Pull: 'Pull',
  /** Pulled ahead of time, and no instance is admitted before every node holds the images. */
  Hold: 'Hold',
} as const
export type PrepullMode = (typeof PrepullMode)[keyof typeof PrepullMode]

/** A definition's pre-pulled images as its status says them (status.images.state). */
export const ImagesState = {
  /** Not yet on every node, and no node failed. */
  Pulling: 'Pulling',
  /** Every image on every node of the DaemonSet (one at least). */
  Ready: 'Ready',
  /** Some node cannot pull some image (status.images.images[].failures says which and why). */
  Failed: 'Failed',
} as const
export type ImagesState = (typeof ImagesState)[keyof typeof ImagesState]

export const Phase = {
  Pending: 'Pending',
  Running: 'Running',
  Error: 'Error',
  Deleted: 'Deleted',
  Terminating: 'Terminating',
} as const
export type Phase = (typeof Phase)[keyof typeof Phase]

export const Reason = {
  // Pending
  Starting: 'Starting',
  Queued: 'Queued',
  ImagePullBackOff: 'ImagePullBackOff',
  Unschedulable: 'Unschedulable',
  NotYetAvailable: 'NotYetAvailable',
  /** Not admitted: prepull Hold, and the definition's images are not yet on every node. */
  ImagesPulling: 'ImagesPulling',
  WaitingForEndpoint: 'WaitingForEndpoint',
  /** Pending (a quota is full) or Error (admission refused the pod for good): Kubernetes would not create it. */
  PodRefused: 'PodRefused',
  // Running
  Ready: 'Ready',
  // Error
  DefinitionNotFound: 'DefinitionNotFound',
  DefinitionInvalid: 'DefinitionInvalid',
  /** The definition names another author than the one the instance was made with (status.definitionAuthor). */
  DefinitionAuthorChanged: 'DefinitionAuthorChanged',
  OwnerLabelMismatch: 'OwnerLabelMismatch',
  OwnerBudgetExceeded: 'OwnerBudgetExceeded',
  StartupTimeout: 'StartupTimeout',
  CrashLoopBackOff: 'CrashLoopBackOff',
  InvalidImage: 'InvalidImage',
  ConfigError: 'ConfigError',
  /** The isolation gate did not let the pod's containers start: its egress was not seen blocked (docs/api.md). */
  IsolationNotEnforced: 'IsolationNotEnforced',
  // Deleted
  Expired: 'Expired',
  Stopped: 'Stopped',
  PastDeadline: 'PastDeadline',
  // Terminating
  Deleting: 'Deleting',
} as const
export type Reason = (typeof Reason)[keyof typeof Reason]

export const ConditionType = {
  Admitted: 'Admitted',
  /** The pod was placed on a node (the kubelet's PodScheduled time). */
  Scheduled: 'Scheduled',
  /** A container of the pod runs (the earliest container start). */
  ContainersStarted: 'ContainersStarted',
  WorkloadReady: 'WorkloadReady',
  EndpointReady: 'EndpointReady',
  Ready: 'Ready',
  Expired: 'Expired',
  RenewalAccepted: 'RenewalAccepted',
} as const
export type ConditionType = (typeof ConditionType)[keyof typeof ConditionType]

export const ExposeType = {
  HTTP: 'HTTP',
  TLS: 'TLS',
  NodePort: 'NodePort',
  LoadBalancer: 'LoadBalancer',
  Internal: 'Internal',
} as const
export type ExposeType = (typeof ExposeType)[keyof typeof ExposeType]

export const Defaults = {
  exposeType: ExposeType.HTTP,
  lifetimeSeconds: 1800,
  startupTimeoutSeconds: 300,
  maxRenewals: 2,
  cost: 1,
  poolSize: 0,
  egress: 'DNS',
  profile: 'Restricted',
  flagMode: 'PerOwner',
  flagPrefix: 'flag{',
  flagSuffix: '}',
  flagEnv: 'FLAG',
} as const

// ---------------------------------------------------------------------------------------------------------------
// Schemas. They check what the hook relies on; the CRDs in manifests/ carry the same rules for the API server.

/**
 * Bounds of what an author or the platform may store, the same as the CRDs' (manifests/crds): every string and
 * list, and the totals a pod's command lines, env and a Challenge's parameters may add up to. What binds them is
 * Metacontroller: it keeps each child's last-applied configuration in an annotation, and a Kubernetes object's
 * annotations hold at most 256 KiB. With these bounds the Deployment of the largest valid definition (8
 * containers, every parameter in each) is about 150 KiB.
 */
export const Bounds = {
  /** Characters of every container's command and args together, and of every container's env values together. */
  podText: 16384,
  /** Env variables of every container together. */
  podEnvItems: 128,
  /**
   * Names in the requests and limits of every container together: 8 containers setting cpu, memory and
   * ephemeral-storage in both lists take 48. Without it, 16 names of 253 characters per list would be a quarter of
   * the largest definition.
   */
  podResourceNames: 64,
  /** Characters of a Challenge's parameter names and values together (every container gets every parameter). */
  parametersText: 4096,
  text: 4096,
  commandItems: 64,
  argsItems: 256,
  envItems: 64,
  ports: 16,
  resourceNames: 16,
  probeCommandItems: 16,
  probeText: 256,
  probeHeaders: 8,
  path: 1024,
  /** Pull Secrets a definition names. */
  pullSecrets: 8,
} as const
export const MAX_COUNTER = 2147483647

const Int = (min: number, max?: number) =>
  max === undefined ? Type.Integer({ minimum: min }) : Type.Integer({ minimum: min, maximum: max })
const DateTime = () => Type.String({ pattern: DATE_TIME, maxLength: 64 })

export const ChallengeSpecSchema = Type.Object(
  {
    definitionRef: Type.Object({ name: Type.String({ minLength: 1, maxLength: 63, pattern: DEFINITION_NAME }) }),
    owner: Type.Object({
      kind: Type.Union([Type.Literal('User'), Type.Literal('Team')]),
      // An owner id is a label value and a part of object names: a DNS label.
      id: Type.String({ pattern: DNS_LABEL }),
    }),
    desiredState: Type.Optional(Type.Union([Type.Literal('Running'), Type.Literal('Stopped')])),
    stopReason: Type.Optional(Type.String({ maxLength: 64 })),
    lifetimeSeconds: Type.Optional(Int(60, 86400)),
    deadline: Type.Optional(DateTime()),
    // Bounded so the status counters derived from them stay exact integers (and int32 in the CRD).
    renewals: Type.Optional(Int(0, MAX_COUNTER)),
    restarts: Type.Optional(Int(0, MAX_COUNTER)),
    parameters: Type.Optional(
      Type.Record(Type.RegExp(new RegExp(ENV_NAME)), Type.String({ maxLength: Bounds.text }), {
        maxProperties: 16,
        additionalProperties: false,
      }),
    ),
  },
  { additionalProperties: true },
)
export type ChallengeSpec = Static<typeof ChallengeSpecSchema>

/** A Secret of the namespace by name and key (a flag's static source, an author's Secret). */
const SecretKeyRef = (options: { additionalProperties?: false } = {}) =>
  Type.Object(
    {
      name: Type.String({ maxLength: 253, pattern: DNS_SUBDOMAIN }),
      key: Type.String({ maxLength: 253, pattern: SECRET_KEY }),
    },
    options,
  )
/**
 * A variable's value, or a key of one of its author's Secrets. Which Secrets an author may name is the API server's
 * rule (the register of authors, manifests/author-policy.yaml): the hook sees no Secret. Every other source
 * (configMapKeyRef, fieldRef, resourceFieldRef) is refused.
 */
const EnvVar = Type.Object(
  {
    name: Type.String({ pattern: ENV_NAME }),
    value: Type.Optional(Type.String({ maxLength: Bounds.text })),
    valueFrom: Type.Optional(
      // Not `optional`: a variable whose Secret is missing would start the container without it, in silence.
      // secretKeyRef is checked for in definition.ts: a valueFrom of another source is then refused by its name.
      Type.Object(
        { secretKeyRef: Type.Optional(SecretKeyRef({ additionalProperties: false })) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)
export type DefinitionEnvVar = Static<typeof EnvVar>
const ContainerPort = Type.Object(
  {
    containerPort: Int(1, 65535),
    name: Type.Optional(Type.String({ pattern: PORT_NAME, maxLength: 15 })),
    protocol: Type.Optional(Type.Union([Type.Literal('TCP'), Type.Literal('UDP'), Type.Literal('SCTP')])),
  },
  { additionalProperties: false },
)
// A whole number or a string, as the CRD's x-kubernetes-int-or-string holds it (a fractional number is written '1.5').
const Quantity = Type.Union([Type.String({ pattern: QUANTITY, maxLength: 64 }), Type.Integer({ minimum: 0 })])
const ResourceList = Type.Record(Type.RegExp(new RegExp(RESOURCE_NAME)), Quantity, {
  additionalProperties: false,
  maxProperties: Bounds.resourceNames,
})
const Resources = Type.Object(
  { requests: Type.Optional(ResourceList), limits: Type.Optional(ResourceList) },
  { additionalProperties: false },
)
const PortRef = Type.Union([Int(1, 65535), Type.String({ pattern: PORT_NAME, maxLength: 15 })])
const Seconds = (min: number) => Type.Optional(Int(min, 3600))
/**
 * A probe as the API server accepts it: one handler and its timings, nothing else. No `host` in httpGet or
 * tcpSocket: the kubelet would connect to that address from the node's network (cloud metadata, node-local
 * services, another player's pod), where no NetworkPolicy applies. Probes always target the pod's own IP.
 */
const Probe = Type.Object(
  {
    exec: Type.Optional(
      Type.Object(
        {
          command: Type.Array(Type.String({ maxLength: Bounds.probeText }), {
            minItems: 1,
            maxItems: Bounds.probeCommandItems,
          }),
        },
        { additionalProperties: false },
      ),
    ),
    httpGet: Type.Optional(
      Type.Object(
        {
          path: Type.Optional(Type.String({ maxLength: Bounds.path })),
          port: PortRef,
          scheme: Type.Optional(Type.Union([Type.Literal('HTTP'), Type.Literal('HTTPS')])),
          httpHeaders: Type.Optional(
            Type.Array(
              Type.Object(
                {
                  name: Type.String({ minLength: 1, maxLength: 128 }),
                  value: Type.String({ maxLength: Bounds.probeText }),
                },
                { additionalProperties: false },
              ),
              { maxItems: Bounds.probeHeaders },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    tcpSocket: Type.Optional(Type.Object({ port: PortRef }, { additionalProperties: false })),
    grpc: Type.Optional(
      Type.Object(
        { port: Int(1, 65535), service: Type.Optional(Type.String({ maxLength: 253 })) },
        { additionalProperties: false },
      ),
    ),
    initialDelaySeconds: Seconds(0),
    periodSeconds: Seconds(1),
    timeoutSeconds: Seconds(1),
    successThreshold: Seconds(1),
    failureThreshold: Seconds(1),
  },
  { additionalProperties: false, minProperties: 1 },
)
export type DefinitionProbe = Static<typeof Probe>

/** Only these keys may be set: running as a given uid is fine, privileges are not. */
const ContainerSecurityContext = Type.Object(
  { runAsUser: Type.Optional(Int(0)), runAsGroup: Type.Optional(Int(0)) },
  { additionalProperties: false },
)
export const ContainerSchema = Type.Object(
  {
    name: Type.String({ pattern: DNS_LABEL }),
    image: Type.String({ minLength: 1, maxLength: 512 }),
    command: Type.Optional(Type.Array(Type.String({ maxLength: Bounds.text }), { maxItems: Bounds.commandItems })),
    args: Type.Optional(Type.Array(Type.String({ maxLength: Bounds.text }), { maxItems: Bounds.argsItems })),
    env: Type.Optional(Type.Array(EnvVar, { maxItems: Bounds.envItems })),
    ports: Type.Optional(Type.Array(ContainerPort, { maxItems: Bounds.ports })),
    resources: Type.Optional(Resources),
    readinessProbe: Type.Optional(Probe),
    securityContext: Type.Optional(ContainerSecurityContext),
  },
  { additionalProperties: false },
)
export type DefinitionContainer = Static<typeof ContainerSchema>

export const DefinitionSpecSchema = Type.Object(
  {
    displayName: Type.Optional(Type.String({ maxLength: 128 })),
    pod: Type.Object(
      {
        containers: Type.Array(ContainerSchema, { minItems: 1, maxItems: 8 }),
        imagePullSecrets: Type.Optional(
          Type.Array(
            Type.Object(
              { name: Type.String({ maxLength: 253, pattern: DNS_SUBDOMAIN }) },
              { additionalProperties: false },
            ),
            { maxItems: Bounds.pullSecrets },
          ),
        ),
      },
      { additionalProperties: false },
    ),
    expose: Type.Object(
      {
        type: Type.Optional(
          Type.Union([
            Type.Literal('HTTP'),
            Type.Literal('TLS'),
            Type.Literal('NodePort'),
            Type.Literal('LoadBalancer'),
            Type.Literal('Internal'),
          ]),
        ),
        container: Type.Optional(Type.String({ maxLength: 63 })),
        port: Int(1, 65535),
      },
      { additionalProperties: false },
    ),
    lifetimeSeconds: Type.Optional(Int(60, 86400)),
    startupTimeoutSeconds: Type.Optional(Int(30, 1800)),
    maxRenewals: Type.Optional(Int(0, 20)),
    cost: Type.Optional(Int(0, 100)),
    availableFrom: Type.Optional(DateTime()),
    availableUntil: Type.Optional(DateTime()),
    network: Type.Optional(
      Type.Object(
        { egress: Type.Optional(Type.Union([Type.Literal('None'), Type.Literal('DNS'), Type.Literal('Internet')])) },
        { additionalProperties: false },
      ),
    ),
    security: Type.Optional(
      Type.Object(
        {
          profile: Type.Optional(Type.Union([Type.Literal('Restricted'), Type.Literal('Baseline')])),
          runtimeClassName: Type.Optional(Type.String({ pattern: DNS_LABEL })),
        },
        { additionalProperties: false },
      ),
    ),
    flag: Type.Optional(
      Type.Object(
        {
          mode: Type.Optional(
            Type.Union([Type.Literal('PerOwner'), Type.Literal('PerInstance'), Type.Literal('Static')]),
          ),
          prefix: Type.Optional(Type.String({ maxLength: 64 })),
          suffix: Type.Optional(Type.String({ maxLength: 64 })),
          env: Type.Optional(Type.String({ pattern: ENV_NAME })),
          staticSecretRef: Type.Optional(SecretKeyRef()),
        },
        { additionalProperties: false },
      ),
    ),
    pool: Type.Optional(
      Type.Object(
        { size: Type.Optional(Int(0, 100)), maxPods: Type.Optional(Int(1, 1000)) },
        { additionalProperties: false },
      ),
    ),
    prepull: Type.Optional(Type.Union([Type.Literal('Off'), Type.Literal('Pull'), Type.Literal('Hold')])),
  },
  { additionalProperties: true },
)
export type DefinitionSpec = Static<typeof DefinitionSpecSchema>
