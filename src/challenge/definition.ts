/**
 * The ChallengeDefinition an instance runs, found among the related objects, checked and completed with the
 * contract's defaults. A definition that asks for anything the security profile forbids is refused with a
 * message naming the field (Error / DefinitionInvalid): the hook never silently drops or alters it.
 */
import type { ErrorObject, ValidateFunction } from 'ajv'
import { COST_UNIT_RESOURCES, DEFAULT_COST_UNIT, type CostUnit } from '../config/config-parsers.js'
import type { Config } from '../config/config.js'
import { compileSchema, DESCRIBED_OPTIONS } from '../contract/validator.js'
import type { KubeObject } from '../contract/protocol.js'
import {
  Annotation,
  Bounds,
  Defaults,
  DefinitionSpecSchema,
  PrepullMode,
  Reason,
  type DefinitionContainer,
  type DefinitionSpec,
  type ExposeType,
} from '../contract/api.js'
import { GATE_CONTAINER } from './gate.js'
import { FLAG_SECRET_SUFFIX } from './names.js'
import { findObject, type ObservedIndex } from './observed.js'
import { field, quote } from './untrusted.js'
import { above, effectiveResources, formatQuantity, quantityValue, resourcesProblem } from './resources.js'
import { PRECOMPILED_DEFINITION } from './precompiled.js'
import { describeSchemaError, pathStep, schemaError } from './schema-errors.js'
import { readTime } from './time.js'

export type Egress = 'None' | 'DNS' | 'Internet'
export type SecurityProfile = 'Restricted' | 'Baseline'
export type FlagMode = 'PerOwner' | 'PerInstance' | 'Static'

export interface ResolvedDefinition {
  name: string
  containers: DefinitionContainer[]
  /** The pull Secrets the pod names (the author's, by the API server's rule); empty for none. */
  imagePullSecrets: string[]
  expose: { type: ExposeType; container: string; port: number }
  lifetimeSeconds: number
  startupTimeoutSeconds: number
  maxRenewals: number
  cost: number
  availableFrom: number | undefined
  availableUntil: number | undefined
  egress: Egress
  profile: SecurityProfile
  runtimeClassName: string | undefined
  flag: {
    mode: FlagMode
    prefix: string
    suffix: string
    env: string
    staticSecretRef: { name: string; key: string } | undefined
  }
  /** The warm pool (docs/api.md#warm-pools); undefined without one (size 0). */
  pool: { size: number; maxPods: number } | undefined
  /** Pre-pulled images (docs/api.md#pre-pulled-images): spec.prepull, else the operator's PREPULL_DEFAULT. */
  prepull: PrepullMode
}

export type DefinitionLookup =
  | { found: true; definition: ResolvedDefinition }
  | { found: false; reason: typeof Reason.DefinitionNotFound | typeof Reason.DefinitionInvalid; message: string }

let compiledSpecCheck: ValidateFunction<DefinitionSpec> | undefined
/** The spec's schema check: the build's (dist/server.js), else compiled at first use. */
function checkSpec(): ValidateFunction<DefinitionSpec> {
  compiledSpecCheck ??= (PRECOMPILED_DEFINITION ??
    compileSchema(DefinitionSpecSchema, DESCRIBED_OPTIONS)) as ValidateFunction<DefinitionSpec>
  return compiledSpecCheck
}

export const DEFINITION_KIND = 'ChallengeDefinition'

/**
 * What the operator lets definitions ask for beyond the profile: extended resources (GPUs: scarce, and uncapped by
 * the defaults) and RuntimeClasses (a RuntimeClass picks the sandbox; an author who could name any would undo the
 * operator's gVisor or Kata).
 */
export interface DefinitionPolicy {
  extendedResources: readonly string[]
  runtimeClasses: readonly string[]
  /** What one unit of cost may hold (COST_UNIT); DEFAULT_COST_UNIT when left out. */
  costUnit?: CostUnit
  /** The most pods a warm pool may hold (POOL_MAX_PODS): pool.maxPods's default and ceiling; DEFAULT_POOL_MAX_PODS when left out. */
  poolMaxPods?: number
  /** A definition's prepull when it sets none (PREPULL_DEFAULT); Off when left out. */
  prepullDefault?: PrepullMode
}

/** POOL_MAX_PODS's default. */
export const DEFAULT_POOL_MAX_PODS = 100

/** The operator's policy, from the configuration. */
export function definitionPolicy(config: Config): DefinitionPolicy {
  return {
    extendedResources: config.allowedExtendedResources,
    runtimeClasses: config.allowedRuntimeClasses,
    costUnit: config.costUnit,
    poolMaxPods: config.poolMaxPods,
    prepullDefault: config.prepull.defaultMode,
  }
}

/** Nothing beyond the profile: no extended resource, no RuntimeClass. */
export const STRICT_POLICY: DefinitionPolicy = { extendedResources: [], runtimeClasses: [] }

/** Lookup of the named definition among related objects (from the customize hook's rule). */
export function lookupDefinition(
  related: ObservedIndex,
  name: string,
  policy: DefinitionPolicy = STRICT_POLICY,
): DefinitionLookup {
  const object = findObject(related, DEFINITION_KIND, name)
  if (!object) {
    return {
      found: false,
      reason: Reason.DefinitionNotFound,
      message: `ChallengeDefinition "${name}" does not exist in this namespace.`,
    }
  }
  return resolveDefinition(name, object.spec, policy)
}

/**
 * The author a definition names (its `challenge-hooks.dev/author` annotation), or '' when it names none: only an
 * operator can make or keep a definition so (admission-policy.yaml), and '' is then a value like any author's.
 */
export function definitionAuthor(object: KubeObject): string {
  const value = field(field(object.metadata, 'annotations'), Annotation.author)
  return typeof value === 'string' ? value : ''
}

function invalid(name: string, problem: string): DefinitionLookup {
  return {
    found: false,
    reason: Reason.DefinitionInvalid,
    message: `ChallengeDefinition "${name}" is invalid: ${problem}.`,
  }
}

/** Checks a definition's spec and fills in the defaults; exported for the author preview command. */
export function resolveDefinition(
  name: string,
  spec: unknown,
  policy: DefinitionPolicy = STRICT_POLICY,
): DefinitionLookup {
  const hostile = prototypeKeyPath(spec)
  if (hostile !== undefined) return invalid(name, `${hostile}: the key is refused (it names an object prototype)`)
  const check = checkSpec()
  // A failed check always has its errors.
  if (!check(spec)) return invalid(name, describeSchemaError('spec', schemaError(check.errors as ErrorObject[])))
  const problem =
    securityProblem(spec, policy) ??
    consistencyProblem(spec) ??
    podSpecProblem(spec, policy) ??
    costProblem(spec, policy) ??
    poolProblem(spec, policy)
  if (problem) return invalid(name, problem)
  // consistencyProblem has read both times.
  const [availableFrom, availableUntil] = [readTime(spec.availableFrom), readTime(spec.availableUntil)]
  const profile = spec.security?.profile ?? Defaults.profile
  const containers = spec.pod.containers
  return {
    found: true,
    definition: {
      name,
      containers,
      imagePullSecrets: (spec.pod.imagePullSecrets ?? []).map((secret) => secret.name),
      expose: {
        type: spec.expose.type ?? Defaults.exposeType,
        container: spec.expose.container ?? (containers[0] as DefinitionContainer).name,
        port: spec.expose.port,
      },
      lifetimeSeconds: spec.lifetimeSeconds ?? Defaults.lifetimeSeconds,
      startupTimeoutSeconds: spec.startupTimeoutSeconds ?? Defaults.startupTimeoutSeconds,
      maxRenewals: spec.maxRenewals ?? Defaults.maxRenewals,
      cost: spec.cost ?? Defaults.cost,
      availableFrom,
      availableUntil,
      egress: spec.network?.egress ?? Defaults.egress,
      profile,
      runtimeClassName: spec.security?.runtimeClassName,
      flag: {
        mode: spec.flag?.mode ?? Defaults.flagMode,
        prefix: spec.flag?.prefix ?? Defaults.flagPrefix,
        suffix: spec.flag?.suffix ?? Defaults.flagSuffix,
        env: spec.flag?.env ?? Defaults.flagEnv,
        staticSecretRef: spec.flag?.staticSecretRef,
      },
      pool: resolvePool(spec, policy),
      prepull: spec.prepull ?? policy.prepullDefault ?? PrepullMode.Off,
    },
  }
}

function resolvePool(spec: DefinitionSpec, policy: DefinitionPolicy): ResolvedDefinition['pool'] {
  const size = spec.pool?.size ?? Defaults.poolSize
  if (size === 0) return undefined
  return { size, maxPods: spec.pool?.maxPods ?? policy.poolMaxPods ?? DEFAULT_POOL_MAX_PODS }
}

/**
 * A pool needs a flag that can be fixed before its player is known (PerOwner is made from the owner, and a running
 * container's environment cannot change), and a ceiling that holds its size within the operator's.
 */
function poolProblem(spec: DefinitionSpec, policy: DefinitionPolicy): string | undefined {
  const size = spec.pool?.size ?? Defaults.poolSize
  const ceiling = policy.poolMaxPods ?? DEFAULT_POOL_MAX_PODS
  const maxPods = spec.pool?.maxPods
  if (size > 0 && (spec.flag?.mode ?? Defaults.flagMode) === 'PerOwner') {
    return 'spec.pool: a pool needs flag.mode PerInstance or Static (a PerOwner flag is made from the player, whom a pooled pod does not know when it starts)'
  }
  if (maxPods !== undefined && maxPods < size) return `spec.pool.maxPods: ${maxPods} is below pool.size (${size})`
  if ((maxPods ?? ceiling) > ceiling || size > ceiling) {
    return `spec.pool: at most ${ceiling} pods (the operator's POOL_MAX_PODS), asked for ${Math.max(size, maxPods ?? 0)}`
  }
  return undefined
}

/**
 * The path of the first `__proto__` key, or `prototype` key under `constructor`, anywhere in the spec. JSON.parse
 * keeps such keys as plain data and the hook never merges them, but a definition that carries them is refused
 * where it is decided (only its own instances), never by refusing the request that carries it. Iterative: the
 * related objects may nest deeper than the stack allows.
 */
export function prototypeKeyPath(value: unknown): string | undefined {
  // A node's path is spelled only for the key found: building one per key cost a tenth of a sync.
  const pending: KeyStep[] = [{ node: value, key: '', inArray: false, up: undefined }]
  while (pending.length > 0) {
    const step = pending.pop() as KeyStep
    const node = step.node
    if (typeof node !== 'object' || node === null) continue
    const inArray = Array.isArray(node)
    for (const key of Object.keys(node)) {
      const child: KeyStep = { node: (node as Record<string, unknown>)[key], key, inArray, up: step }
      if (key === '__proto__' || (key === 'prototype' && step.key === 'constructor')) return keyPath(child)
      pending.push(child)
    }
  }
  return undefined
}

/** A value met by prototypeKeyPath under `key`; `up` is the step it was found in (undefined for the spec itself). */
interface KeyStep {
  node: unknown
  key: string
  inArray: boolean
  up: KeyStep | undefined
}

function keyPath(step: KeyStep): string {
  let path = ''
  for (let at: KeyStep = step; at.up !== undefined; at = at.up) path = `${pathStep(at.key, at.inArray)}${path}`
  return `spec${path}`
}

/** The schema already refuses privileged, host namespaces, added capabilities; this is what it cannot say. */
function securityProblem(spec: DefinitionSpec, policy: DefinitionPolicy): string | undefined {
  const runtimeClass = spec.security?.runtimeClassName
  if (runtimeClass !== undefined && !policy.runtimeClasses.includes(runtimeClass)) {
    const allowed =
      policy.runtimeClasses.length === 0 ? 'none is allowed' : `allowed: ${policy.runtimeClasses.join(', ')}`
    return `spec.security.runtimeClassName: the RuntimeClass ${runtimeClass} is not one the operator allows (${allowed}; ALLOWED_RUNTIME_CLASSES)`
  }
  if ((spec.security?.profile ?? Defaults.profile) !== 'Restricted') return undefined
  for (const [index, container] of spec.pod.containers.entries()) {
    if (container.securityContext?.runAsUser === 0) {
      return `spec.pod.containers[${index}].securityContext.runAsUser: 0 (root) is not allowed by the Restricted profile; use security.profile Baseline`
    }
    // Group 0 is root's group on the node: files the node's root group may read or write would be the player's.
    // The Pod Security Standard lets it through, so the hook is the one to refuse it. The contract lets authors set
    // no pod-level group (fsGroup, supplementalGroups): the schema refuses those as unknown fields.
    if (container.securityContext?.runAsGroup === 0) {
      return `spec.pod.containers[${index}].securityContext.runAsGroup: 0 (root's group) is not allowed by the Restricted profile; use another group or security.profile Baseline`
    }
  }
  return undefined
}

function consistencyProblem(spec: DefinitionSpec): string | undefined {
  const names = spec.pod.containers.map((container) => container.name)
  const duplicate = names.find((name, index) => names.indexOf(name) !== index)
  if (duplicate !== undefined) return `spec.pod.containers: the name "${duplicate}" is used twice`
  const gate = names.indexOf(GATE_CONTAINER)
  if (gate !== -1)
    return `spec.pod.containers[${gate}].name: ${GATE_CONTAINER} is the name of the isolation gate, the pod's init container; rename the container`
  if (spec.expose.container !== undefined && !names.includes(spec.expose.container)) {
    return `spec.expose.container: no container is named ${quote(spec.expose.container)}`
  }
  const pullSecrets = (spec.pod.imagePullSecrets ?? []).map((secret) => secret.name)
  const twice = pullSecrets.find((name, index) => pullSecrets.indexOf(name) !== index)
  if (twice !== undefined) return `spec.pod.imagePullSecrets: the Secret "${twice}" is named twice`
  const flagEnv = spec.flag?.env ?? Defaults.flagEnv
  for (const [index, container] of spec.pod.containers.entries()) {
    if (container.env?.some((variable) => variable.name === flagEnv)) {
      return `spec.pod.containers[${index}].env: ${flagEnv} is reserved for the flag (flag.env)`
    }
    const problem = envSourceProblem(container, `spec.pod.containers[${index}]`)
    if (problem) return problem
  }
  if ((spec.flag?.mode ?? Defaults.flagMode) === 'Static') {
    const ref = spec.flag?.staticSecretRef
    if (ref === undefined) return 'spec.flag.staticSecretRef: required when flag.mode is Static'
    // Every instance's flag Secret is `<instance>-flag`: a Secret of the author's named so could be an instance's
    // name, and an instance would then mount the author's Secret instead of its own.
    if (ref.name.endsWith(FLAG_SECRET_SUFFIX)) {
      return `spec.flag.staticSecretRef.name: a name ending in ${FLAG_SECRET_SUFFIX} is reserved for the instances' own flag Secrets; rename the Secret`
    }
  }
  for (const field of ['availableFrom', 'availableUntil'] as const) {
    const value = spec[field]
    if (value !== undefined && readTime(value) === undefined) return `spec.${field}: ${quote(value)} is not a date-time`
  }
  return undefined
}

/**
 * A variable takes its value from one place, as the API server requires; and a Secret a variable reads is never an
 * instance's flag Secret (every one is `<instance>-flag`: it would hand the challenge another player's flag). Which
 * other Secrets a definition may read is the register of authors' rule, held by the API server.
 */
function envSourceProblem(container: DefinitionContainer, at: string): string | undefined {
  for (const [index, variable] of (container.env ?? []).entries()) {
    if (variable.valueFrom === undefined) continue
    const ref = variable.valueFrom.secretKeyRef
    if (ref === undefined) return `${at}.env[${index}].valueFrom: needs secretKeyRef, the only source allowed`
    if (variable.value !== undefined) {
      return `${at}.env[${index}]: ${variable.name} has both value and valueFrom; give one`
    }
    if (ref.name.endsWith(FLAG_SECRET_SUFFIX)) {
      return `${at}.env[${index}].valueFrom.secretKeyRef.name: a name ending in ${FLAG_SECRET_SUFFIX} is reserved for the instances' own flag Secrets`
    }
  }
  return undefined
}

const PROBE_HANDLERS = ['exec', 'httpGet', 'tcpSocket', 'grpc'] as const

/** What the API server would refuse in the pod the definition renders to (resources, probes, ports), and its size. */
function podSpecProblem(spec: DefinitionSpec, policy: DefinitionPolicy): string | undefined {
  const containers = spec.pod.containers
  const commandLines = characters(
    containers.flatMap((container) => [...(container.command ?? []), ...(container.args ?? [])]),
  )
  if (commandLines > Bounds.podText) {
    return `spec.pod.containers: command and args of all containers together must be at most ${Bounds.podText} characters, got ${commandLines}`
  }
  const env = containers.flatMap((container) => container.env ?? [])
  if (env.length > Bounds.podEnvItems)
    return `spec.pod.containers: at most ${Bounds.podEnvItems} env variables in all containers together, got ${env.length}`
  const envText = characters(env.map((variable) => variable.value ?? ''))
  if (envText > Bounds.podText) {
    return `spec.pod.containers: the env values of all containers together must be at most ${Bounds.podText} characters, got ${envText}`
  }
  const resourceNames = containers
    .map(
      (container) =>
        Object.keys(container.resources?.requests ?? {}).length + Object.keys(container.resources?.limits ?? {}).length,
    )
    .reduce((sum, names) => sum + names, 0)
  if (resourceNames > Bounds.podResourceNames) {
    return `spec.pod.containers: at most ${Bounds.podResourceNames} resource names in the requests and limits of all containers together, got ${resourceNames}`
  }
  for (const [index, container] of spec.pod.containers.entries()) {
    const at = `spec.pod.containers[${index}]`
    const problem = resourcesProblem(container, at, policy.extendedResources)
    if (problem) return problem
    const probe = container.readinessProbe
    if (probe !== undefined) {
      const handlers = PROBE_HANDLERS.filter((handler) => probe[handler] !== undefined)
      if (handlers.length !== 1) {
        return `${at}.readinessProbe: needs exactly one handler of ${PROBE_HANDLERS.join(', ')}, got ${handlers.length === 0 ? 'none' : handlers.join(', ')}`
      }
    }
    const portNames = (container.ports ?? []).flatMap((port) => (port.name === undefined ? [] : [port.name]))
    const duplicate = portNames.find((portName, position) => portNames.indexOf(portName) !== position)
    if (duplicate !== undefined) return `${at}.ports: the name "${duplicate}" is used twice`
  }
  return undefined
}

/**
 * What an instance may hold is tied to its cost: the limits of all its containers together (the defaults for those
 * the author leaves out), per resource, at most `cost` units of COST_UNIT, and one unit for a free instance (cost 0).
 * The owner's budget counts units, so an owner holds at most OWNER_BUDGET units whatever the definitions ask for,
 * and a free instance, which the budget does not count, holds one. Limits, not requests: a request is at most its
 * limit, and the namespace's quota counts both.
 */
function costProblem(spec: DefinitionSpec, policy: DefinitionPolicy): string | undefined {
  const cost = spec.cost ?? Defaults.cost
  const units = Math.max(cost, 1)
  const unit = policy.costUnit ?? DEFAULT_COST_UNIT
  for (const resource of COST_UNIT_RESOURCES) {
    // resourcesProblem has read every quantity, and the unit's are checked at start.
    const total = spec.pod.containers
      .map((container) => quantityValue(effectiveResources(container).limits[resource] as string | number) as number)
      .reduce((sum, value) => sum + value, 0)
    const perUnit = quantityValue(unit[resource]) as number
    if (above(total, units * perUnit)) {
      // The fewest units that hold it, by the same rounding as `above`: 2Gi + 1 byte needs 2, 1024Mi of 1Gi needs 1.
      const ceiling = Math.ceil(total / perUnit)
      const needed = above(total, (ceiling - 1) * perUnit) ? ceiling : ceiling - 1
      const remedy = needed <= 100 ? `raise spec.cost to ${needed} or lower the limits` : 'lower the limits'
      return `spec.cost: the ${resource} limits of all containers add up to ${formatQuantity(total, resource)}, above the ${formatQuantity(units * perUnit, resource)} that cost ${cost} may hold (${unit[resource]} per unit, COST_UNIT; one unit when the cost is 0); ${remedy}`
    }
  }
  return undefined
}

/**
 * Characters of all the texts together, as JavaScript counts them (UTF-16 units): the same as the CRDs' count
 * except for text outside the Basic Multilingual Plane (emoji), which counts twice here.
 */
export function characters(texts: readonly string[]): number {
  return texts.reduce((sum, text) => sum + text.length, 0)
}
