/**
 * The ChallengeDefinition an instance runs, found among the related objects, checked and completed with the
 * contract's defaults. A definition that asks for anything the security profile forbids is refused with a
 * message naming the field (Error / DefinitionInvalid): the hook never silently drops or alters it.
 */
import { TypeCompiler, type ValueError } from '@sinclair/typebox/compiler'
import {
  Bounds,
  Defaults,
  DefinitionSpecSchema,
  Reason,
  type DefinitionContainer,
  type DefinitionSpec,
  type ExposeType,
} from './api.js'
import { findObject, type ObservedIndex } from './observed.js'
import { resourcesProblem } from './resources.js'
import { describeSchemaError } from './schema-errors.js'

export type Egress = 'None' | 'DNS' | 'Internet'
export type SecurityProfile = 'Restricted' | 'Baseline'
export type FlagMode = 'PerOwner' | 'PerInstance' | 'Static'

export interface ResolvedDefinition {
  name: string
  containers: DefinitionContainer[]
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
}

export type DefinitionLookup =
  | { found: true; definition: ResolvedDefinition }
  | { found: false; reason: typeof Reason.DefinitionNotFound | typeof Reason.DefinitionInvalid; message: string }

const checkSpec = TypeCompiler.Compile(DefinitionSpecSchema)

export const DEFINITION_KIND = 'ChallengeDefinition'

/** Lookup of the named definition among related objects (from the customize hook's rule). */
export function lookupDefinition(related: ObservedIndex, name: string, allowedExtendedResources: readonly string[] = []): DefinitionLookup {
  const object = findObject(related, DEFINITION_KIND, name)
  if (!object) {
    return {
      found: false,
      reason: Reason.DefinitionNotFound,
      message: `ChallengeDefinition "${name}" does not exist in this namespace.`,
    }
  }
  return resolveDefinition(name, object.spec, allowedExtendedResources)
}

function invalid(name: string, problem: string): DefinitionLookup {
  return { found: false, reason: Reason.DefinitionInvalid, message: `ChallengeDefinition "${name}" is invalid: ${problem}.` }
}

/**
 * Checks a definition's spec and fills in the defaults; exported for the author preview command.
 * `allowedExtendedResources`: the extended resources (e.g. nvidia.com/gpu) the operator lets authors ask for.
 */
export function resolveDefinition(name: string, spec: unknown, allowedExtendedResources: readonly string[] = []): DefinitionLookup {
  const hostile = prototypeKeyPath(spec)
  if (hostile !== undefined) return invalid(name, `${hostile}: the key is refused (it names an object prototype)`)
  if (!checkSpec.Check(spec)) {
    // A failed Check always has a first error.
    return invalid(name, describeSchemaError('spec', checkSpec.Errors(spec).First() as ValueError))
  }
  const problem = securityProblem(spec) ?? consistencyProblem(spec) ?? podProblem(spec, allowedExtendedResources)
  if (problem) return invalid(name, problem)
  const profile = spec.security?.profile ?? Defaults.profile
  const containers = spec.pod.containers
  return {
    found: true,
    definition: {
      name,
      containers,
      expose: {
        type: spec.expose.type ?? Defaults.exposeType,
        container: spec.expose.container ?? (containers[0] as DefinitionContainer).name,
        port: spec.expose.port,
      },
      lifetimeSeconds: spec.lifetimeSeconds ?? Defaults.lifetimeSeconds,
      startupTimeoutSeconds: spec.startupTimeoutSeconds ?? Defaults.startupTimeoutSeconds,
      maxRenewals: spec.maxRenewals ?? Defaults.maxRenewals,
      cost: spec.cost ?? Defaults.cost,
      availableFrom: spec.availableFrom === undefined ? undefined : Date.parse(spec.availableFrom),
      availableUntil: spec.availableUntil === undefined ? undefined : Date.parse(spec.availableUntil),
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
    },
  }
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
  for (let at: KeyStep = step; at.up !== undefined; at = at.up) path = at.inArray ? `[${at.key}]${path}` : `.${at.key}${path}`
  return `spec${path}`
}

/** The schema already refuses privileged, host namespaces, added capabilities; this is what it cannot say. */
function securityProblem(spec: DefinitionSpec): string | undefined {
  if ((spec.security?.profile ?? Defaults.profile) !== 'Restricted') return undefined
  for (const [index, container] of spec.pod.containers.entries()) {
    if (container.securityContext?.runAsUser === 0) {
      return `spec.pod.containers[${index}].securityContext.runAsUser: 0 (root) is not allowed by the Restricted profile; use security.profile Baseline`
    }
  }
  return undefined
}

function consistencyProblem(spec: DefinitionSpec): string | undefined {
  const names = spec.pod.containers.map((container) => container.name)
  const duplicate = names.find((name, index) => names.indexOf(name) !== index)
  if (duplicate !== undefined) return `spec.pod.containers: the name "${duplicate}" is used twice`
  if (spec.expose.container !== undefined && !names.includes(spec.expose.container)) {
    return `spec.expose.container: no container is named "${spec.expose.container}"`
  }
  const flagEnv = spec.flag?.env ?? Defaults.flagEnv
  for (const [index, container] of spec.pod.containers.entries()) {
    if (container.env?.some((variable) => variable.name === flagEnv)) {
      return `spec.pod.containers[${index}].env: ${flagEnv} is reserved for the flag (flag.env)`
    }
  }
  if ((spec.flag?.mode ?? Defaults.flagMode) === 'Static' && spec.flag?.staticSecretRef === undefined) {
    return 'spec.flag.staticSecretRef: required when flag.mode is Static'
  }
  for (const field of ['availableFrom', 'availableUntil'] as const) {
    const value = spec[field]
    if (value !== undefined && Number.isNaN(Date.parse(value))) return `spec.${field}: "${value}" is not a date-time`
  }
  return undefined
}

const PROBE_HANDLERS = ['exec', 'httpGet', 'tcpSocket', 'grpc'] as const

/** What the API server would refuse in the pod the definition renders to (resources, probes, ports), and its size. */
function podProblem(spec: DefinitionSpec, allowedExtendedResources: readonly string[]): string | undefined {
  const containers = spec.pod.containers
  const commandLines = characters(containers.flatMap((container) => [...(container.command ?? []), ...(container.args ?? [])]))
  if (commandLines > Bounds.podText) {
    return `spec.pod.containers: command and args of all containers together must be at most ${Bounds.podText} characters, got ${commandLines}`
  }
  const env = containers.flatMap((container) => container.env ?? [])
  if (env.length > Bounds.podEnvItems) return `spec.pod.containers: at most ${Bounds.podEnvItems} env variables in all containers together, got ${env.length}`
  const envText = characters(env.map((variable) => variable.value ?? ''))
  if (envText > Bounds.podText) {
    return `spec.pod.containers: the env values of all containers together must be at most ${Bounds.podText} characters, got ${envText}`
  }
  for (const [index, container] of spec.pod.containers.entries()) {
    const at = `spec.pod.containers[${index}]`
    const problem = resourcesProblem(container, at, allowedExtendedResources)
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
 * Characters of all the texts together, as JavaScript counts them (UTF-16 units): the same as the CRDs' count
 * except for text outside the Basic Multilingual Plane (emoji), which counts twice here.
 */
export function characters(texts: readonly string[]): number {
  return texts.reduce((sum, text) => sum + text.length, 0)
}
