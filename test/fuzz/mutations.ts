/**
 * Mutations of valid hook requests, as fast-check values: each is a plain description (which subtree, which
 * node, what to do), applied deterministically to a fresh copy of a base request, so a failing case shrinks to
 * a short list of small edits.
 */
import fc from 'fast-check'
import { customizeRequest, finalizingRequest, newRequest, runningRequest } from '../helpers/hook-requests.js'

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type Container = Json[] | { [key: string]: Json }

export const BASES = {
  'new v1': () => newRequest('v1'),
  'new v2': () => newRequest('v2'),
  'running web v1': () => runningRequest('v1', 'web'),
  'running web v2': () => runningRequest('v2', 'web'),
  'running netcat v2': () => runningRequest('v2', 'netcat'),
  finalizing: () => finalizingRequest('v1'),
  customize: () => customizeRequest(),
} as const
export type BaseName = keyof typeof BASES

/** Subtrees a mutation aims at; '' is the whole request. Paths that do not exist fall back to the whole request. */
export const FOCUS = [
  '',
  'parent',
  'parent.metadata',
  'parent.metadata.labels',
  'parent.spec',
  'parent.spec.owner',
  'parent.status',
  'children',
  'children.Deployment.apps/v1',
  'children.Service.v1',
  'children.Secret.v1',
  'related',
  'related.ChallengeDefinition.challenge-hooks.dev/v1alpha1',
] as const

export const HUGE = 'x'.repeat(1024 * 1024)

/**
 * 5000 levels of `{"a": ...}`, far deeper than any Kubernetes object. Too deep for JSON.stringify itself, so
 * requests carry a marker that `serialize` replaces with the text.
 */
const DEEP_MARKER = '@@deeply-nested@@'
export const DEEP_LEVELS = 5000
const DEEP_TEXT = '{"a":'.repeat(DEEP_LEVELS) + '"bottom"' + '}'.repeat(DEEP_LEVELS)

export function serialize(request: Json): string {
  return JSON.stringify(request).replaceAll(`"${DEEP_MARKER}"`, DEEP_TEXT)
}

export type Mutation =
  | { op: 'delete'; focus: number; at: number }
  | { op: 'set'; focus: number; at: number; value: Json }
  | { op: 'add'; focus: number; at: number; key: string; value: Json }
  | { op: 'huge'; focus: number; at: number }
  | { op: 'deep'; focus: number; at: number }
  | { op: 'rekey'; focus: number; at: number; key: string }
  | { op: 'duplicate-group'; group: number; as: string }
  | { op: 'v2-keys'; group: number }

const specialStrings = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  '\u0007bell',
  'line\nbreak',
  '\u202eright-to-left',
  'é',
  'İ',
  '🚩flag',
  '\ud800',
  'a'.repeat(64),
  'a'.repeat(254),
  'web-login-u-alice',
  'Running',
  'Stopped',
  'Team',
  'Deleted',
  'Error',
  'StartupTimeout',
  '2026-11-22T12:00:00Z',
  '+275760-09-13T00:00:00.000Z',
  '1',
  'Nov 22 2026',
  '-1',
  '__proto__',
  'constructor',
  'prototype',
  'Deployment.apps/v1',
  'challenges/web-login-u-alice',
)

export const strings = fc.oneof(
  specialStrings,
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
)

const numbers = fc.oneof(
  fc.constantFrom(-1, 0, 1, 1.5, -0, 59, 60, 65535, 65536, 2 ** 31, 2 ** 53 + 2, 1e300, -1e300),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
)

const leaves: fc.Arbitrary<Json> = fc.oneof(fc.constant(null), fc.boolean(), numbers, strings)

export const values: fc.Arbitrary<Json> = fc.oneof(
  { arbitrary: leaves, weight: 6 },
  { arbitrary: fc.array(leaves, { maxLength: 3 }), weight: 1 },
  { arbitrary: fc.dictionary(strings, leaves, { maxKeys: 3 }), weight: 1 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>, weight: 1 },
)

const focus = fc.nat({ max: FOCUS.length - 1 })
const at = fc.nat({ max: 10_000 })

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('delete' as const), focus, at }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant('set' as const), focus, at, value: values }), weight: 6 },
  { arbitrary: fc.record({ op: fc.constant('add' as const), focus, at, key: strings, value: values }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('huge' as const), focus, at }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('deep' as const), focus, at }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('rekey' as const), focus, at, key: strings }), weight: 1 },
  {
    arbitrary: fc.record({
      op: fc.constant('duplicate-group' as const),
      group: fc.nat({ max: 20 }),
      as: fc.constantFrom(
        'Deployment.apps/v1',
        'Secret.v1',
        'Deployment.apps/v1beta1',
        'Service.v1',
        'Pod.v1',
        'Challenge.challenge-hooks.dev/v1alpha1',
      ),
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ op: fc.constant('v2-keys' as const), group: fc.nat({ max: 20 }) }), weight: 1 },
)

function isContainer(value: Json | undefined): value is Container {
  return typeof value === 'object' && value !== null
}

/** Follows a FOCUS path; group keys contain dots, so each step takes the longest key that matches. */
function subtree(root: Container, path: string): Container {
  let node: Container = root
  let rest = path
  while (rest !== '') {
    const keys = Object.keys(node).filter((key) => rest === key || rest.startsWith(`${key}.`))
    const key = keys.sort((a, b) => b.length - a.length)[0]
    const next = key === undefined ? undefined : (node as Record<string, Json>)[key]
    if (key === undefined || !isContainer(next)) return root
    node = next
    rest = rest.slice(key.length + 1)
  }
  return node
}

/** Every (container, key) under `root`, in a fixed order, the root's own slot excluded. */
function slots(root: Container): [Container, string][] {
  const result: [Container, string][] = []
  const pending: Container[] = [root]
  for (let node = pending.shift(); node !== undefined && result.length < 5000; node = pending.shift()) {
    for (const key of Object.keys(node)) {
      result.push([node, key])
      const child = (node as Record<string, Json>)[key]
      if (isContainer(child)) pending.push(child)
    }
  }
  return result
}

/** Sets an own, enumerable property even for `__proto__`, so JSON.stringify writes it. */
function put(container: Container, key: string, value: Json): void {
  Object.defineProperty(container, key, { value, enumerable: true, writable: true, configurable: true })
}

function groupsOf(request: Record<string, Json>): [Record<string, Json>, string][] {
  const result: [Record<string, Json>, string][] = []
  for (const field of ['children', 'related']) {
    const groups = request[field]
    if (isContainer(groups) && !Array.isArray(groups)) for (const key of Object.keys(groups)) result.push([groups, key])
  }
  return result
}

export function applyMutation(request: Record<string, Json>, mutation: Mutation): void {
  if (mutation.op === 'duplicate-group' || mutation.op === 'v2-keys') {
    const all = groupsOf(request)
    const picked = all[mutation.group % Math.max(all.length, 1)]
    if (picked === undefined) return
    const [groups, key] = picked
    const group = groups[key]
    if (mutation.op === 'duplicate-group') {
      put(groups, mutation.as, structuredClone(group) as Json)
      return
    }
    if (!isContainer(group) || Array.isArray(group)) return
    for (const [name, object] of Object.entries(group)) {
      put(group, `challenges/${name}`, object)
    }
    return
  }
  const root = subtree(request, FOCUS[mutation.focus] as string)
  const all = slots(root)
  const slot = all[mutation.at % Math.max(all.length, 1)]
  if (slot === undefined) return
  const [container, key] = slot
  switch (mutation.op) {
    case 'delete':
      if (Array.isArray(container)) container.splice(Number(key), 1)
      else delete (container as Record<string, Json>)[key]
      return
    case 'set':
      put(container, key, structuredClone(mutation.value))
      return
    case 'huge':
      put(container, key, HUGE)
      return
    case 'deep':
      put(container, key, DEEP_MARKER)
      return
    case 'add': {
      const target = (container as Record<string, Json>)[key]
      put(
        isContainer(target) && !Array.isArray(target) ? target : container,
        mutation.key,
        structuredClone(mutation.value),
      )
      return
    }
    case 'rekey': {
      if (Array.isArray(container)) return
      const value = container[key] as Json
      delete container[key]
      put(container, mutation.key, value)
      return
    }
  }
}

const built = new Map<BaseName, unknown>()

export function mutated(base: BaseName, mutations: readonly Mutation[]): Record<string, Json> {
  if (!built.has(base)) built.set(base, BASES[base]())
  const request = structuredClone(built.get(base)) as Record<string, Json>
  for (const each of mutations) applyMutation(request, each)
  return request
}
