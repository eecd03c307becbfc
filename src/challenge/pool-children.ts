/**
 * A warm pool's children (docs/api.md#warm-pools), one typed builder per kind: each pooled instance's flag Secret
 * and Pod, and the NetworkPolicies every pool pod of the definition shares. The Pod is the hardened pod a cold
 * instance of the definition runs (children.ts), without parameters. Names carry a dot, which no instance's child
 * name (a DNS-1035 label) holds, so a pool's child never takes an instance's name.
 */
import { createHash } from 'node:crypto'
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy'
import type { IPod } from 'kubernetes-models/v1/Pod'
import type { ISecret } from 'kubernetes-models/v1/Secret'
import type { Config } from '../config/config.js'
import type { DesiredChild, LabelSelector } from '../contract/protocol.js'
import { Annotation, Label, MANAGED_BY } from '../contract/api.js'
import { dnsRule, FLAG_KEY, internetRule, podSpec } from './children.js'
import type { ResolvedDefinition } from './definition.js'
import { flagSecretPart } from './hmac.js'
import { FLAG_SECRET_SUFFIX } from './names.js'

/** The names of a definition's pool: pods `<prefix><n>`, their Secrets `<prefix><n>-flag`, and the two policies. */
export interface PoolNames {
  definition: string
  prefix: string
  isolatePolicy: string
  internetPolicy: string
}

export function poolNames(definition: string): PoolNames {
  return {
    definition,
    prefix: `${definition}.pool-`,
    isolatePolicy: `${definition}.pool-isolate`,
    internetPolicy: `${definition}.pool-internet`,
  }
}

/** The flag Secret of the pool pod `pod`. */
export function poolFlagSecretName(pod: string): string {
  return `${pod}${FLAG_SECRET_SUFFIX}`
}

/**
 * The labels of the Secrets and policies: managed by the hook (so no Challenge's customize relates a pool's flag
 * Secret as a Static flag's source) and of the definition.
 */
function poolLabels(names: PoolNames): Record<string, string> {
  return { [Label.managedBy]: MANAGED_BY, [Label.definition]: names.definition }
}

/** Every pool pod of the definition and nothing else: instances' pods carry no pool slot, nor anyone's the label. */
function poolPodSelector(names: PoolNames): LabelSelector {
  return { matchLabels: poolLabels(names), matchExpressions: [{ key: Label.poolSlot, operator: 'Exists' }] }
}

/**
 * No ingress at all (a claimed pod's comes from its Challenge's `-expose`, policies add up), and egress to DNS only,
 * none with egress None. Not even among pool pods: they serve different players. A rule list that would be empty is
 * left out, since the API server drops an empty list and Metacontroller would then find a change at every sync.
 */
export function poolIsolatePolicy(
  names: PoolNames,
  definition: ResolvedDefinition,
  config: Config,
): INetworkPolicy & DesiredChild {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: names.isolatePolicy, labels: poolLabels(names) },
    spec: {
      podSelector: poolPodSelector(names),
      policyTypes: ['Ingress', 'Egress'],
      ...(definition.egress === 'None' ? {} : { egress: [dnsRule(config)] }),
    },
  }
}

/** Egress Internet: as an instance's `-internet`. */
export function poolInternetPolicy(names: PoolNames, config: Config): INetworkPolicy & DesiredChild {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: names.internetPolicy, labels: poolLabels(names) },
    spec: { podSelector: poolPodSelector(names), policyTypes: ['Egress'], egress: [internetRule(config)] },
  }
}

/**
 * A pool pod's flag Secret: without data until its flag is known (a PerInstance flag is made from its uid). Once its
 * pod is claimed it carries the claim too, so that it is known for a flag a player may have seen after its pod is
 * gone (pool-hooks.ts never hands it to another pod).
 */
export function poolFlagSecret(
  names: PoolNames,
  pod: string,
  data: string | undefined,
  claimedBy: string | undefined,
): ISecret & DesiredChild {
  // Its pod's slot: a Challenge reads its claim, and the pod it serves, from this Secret (pool-serving.ts).
  const labels = { ...poolLabels(names), [Label.poolSlot]: pod.slice(names.prefix.length) }
  return withClaim(
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: poolFlagSecretName(pod), labels },
      type: 'Opaque',
      ...(data === undefined ? {} : { data: { [FLAG_KEY]: data } }),
    },
    claimedBy,
  )
}

/** The child with the claim label added, when there is a claim. */
export function withClaim<Child extends DesiredChild>(child: Child, claimedBy: string | undefined): Child {
  if (claimedBy === undefined) return child
  const labels = { ...child.metadata.labels, [Label.claimedBy]: claimedBy }
  return { ...child, metadata: { ...child.metadata, labels } }
}

export interface PoolPodInput {
  names: PoolNames
  definition: ResolvedDefinition
  config: Config
  /** `<prefix><slot>` */
  name: string
  slot: string
  rendering: string
  claimedBy: string | undefined
  /** The uid of the pod's flag Secret, from which its PerInstance flag was made. */
  flagUid: string
}

export function poolPod(input: PoolPodInput): IPod & DesiredChild {
  const { names, slot } = input
  const pod: IPod & DesiredChild = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: input.name,
      labels: { ...poolLabels(names), [Label.poolSlot]: slot, [Label.poolRendering]: input.rendering },
      annotations: { [Annotation.flagUid]: input.flagUid },
    },
    // The pod's name holds a dot, which a host name may not.
    spec: {
      hostname: `pool-${slot}`,
      ...podSpec({
        definition: input.definition,
        config: input.config,
        parameters: {},
        flagSecretName: poolFlagSecretName(input.name),
      }),
    },
  }
  return withClaim(pod, input.claimedBy)
}

const RENDERING_LENGTH = 10

/**
 * 10 hex of what a pool pod of the definition is today: its spec (whatever the slot) and its flag's shape. Another
 * rendering drains the free pods and makes new ones, whether the definition changed or the operator's settings
 * that enter the pod (the isolation gate, placement). A Static flag enters as an HMAC under FLAG_SECRET, so the
 * label tells nothing of it, and a changed Static flag is never handed out from a pod made with the old one.
 */
export function poolRendering(definition: ResolvedDefinition, config: Config, staticFlag: string | undefined): string {
  const spec = podSpec({ definition, config, parameters: {}, flagSecretName: '' })
  const { mode, prefix, suffix } = definition.flag
  const flag = {
    mode,
    prefix,
    suffix,
    ...(staticFlag === undefined ? {} : { static: flagSecretPart(config.flagSecret, staticFlag) }),
  }
  return createHash('sha256').update(JSON.stringify({ spec, flag })).digest('hex').slice(0, RENDERING_LENGTH)
}
