// The hook's schemas (src/challenge/api.ts) and the CRDs' openAPIV3Schema (manifests/crds) state the same bounds:
// both are walked together, field by field, and every maxLength, minLength, maxItems, minItems, maxProperties,
// enum, pattern, format, minimum, maximum, type and required list must be equal, or be one of the differences
// below, each with its reason and a check that it holds. A field the CRD does not declare is checked by the hook
// alone only where the CRD keeps unknown fields (x-kubernetes-preserve-unknown-fields: stored as written, for the
// hook to refuse with a message). The CEL rules' numbers and key rules are the hook's Bounds and patterns.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import t from 'tap'
import { parse } from 'yaml'
import { Bounds, ChallengeSpecSchema, DATE_TIME, DefinitionSpecSchema, ENV_NAME } from '../../src/challenge/api.js'
import { DNS_LABEL, DNS_SUBDOMAIN, PORT_NAME } from '../../src/patterns.js'

type Schema = { [keyword: string]: unknown }

/** Run from the repository (tap, and StrykerJS's sandbox). */
function crdSpec(file: string): Schema {
  const crd = parse(readFileSync(join(process.cwd(), 'manifests/crds', file), 'utf8')) as {
    spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: Schema } } } }[] }
  }
  return (crd.spec.versions[0] as (typeof crd.spec.versions)[0]).schema.openAPIV3Schema.properties.spec
}

const KEYWORDS = [
  'type',
  'maxLength',
  'minLength',
  'maxItems',
  'minItems',
  'maxProperties',
  'minProperties',
  'enum',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'required',
] as const
type Keyword = (typeof KEYWORDS)[number]

/** What a node states, in one form for both: a union of literals is an enum, lists are sorted. */
function bounds(schema: Schema): Partial<Record<Keyword, unknown>> {
  const anyOf = schema.anyOf as Schema[] | undefined
  const literals = anyOf?.every((branch) => 'const' in branch) === true ? anyOf : undefined
  const stated: Partial<Record<Keyword, unknown>> = {}
  for (const keyword of KEYWORDS) {
    const value = schema[keyword]
    if (value !== undefined) stated[keyword] = Array.isArray(value) ? [...value].sort() : value
  }
  if (literals !== undefined) {
    stated.type = 'string'
    stated.enum = literals.map((branch) => branch.const).sort()
  }
  if (Array.isArray(stated.required) && stated.required.length === 0) delete stated.required
  return stated
}

interface Difference {
  path: string
  keyword: Keyword
  crd: unknown
  hook: unknown
}

/**
 * The differences allowed, each with why, and a check that the two still accept the same values (or why not).
 * The test fails on a difference not listed here, and on a listed one that no longer exists.
 */
interface Allowed {
  keyword: Keyword
  crd: unknown
  hook: unknown
  why: string
  /** Throws when the difference is not what `why` says it is. */
  holds?(crdNode: Schema, hookNode: Schema): void
}

/** Strings of `alphabet` up to `maxLength + 2` characters accepted alike by both: a pattern and a maxLength against another pattern. */
function sameStrings(crdNode: Schema, hookNode: Schema, alphabet: string): void {
  const accepts = (node: Schema, value: string) =>
    (node.maxLength === undefined || [...value].length <= (node.maxLength as number)) &&
    (node.minLength === undefined || [...value].length >= (node.minLength as number)) &&
    (node.pattern === undefined || new RegExp(node.pattern as string, 'u').test(value))
  const longest =
    Math.max((crdNode.maxLength as number | undefined) ?? 0, (hookNode.maxLength as number | undefined) ?? 0, 64) + 2
  const text = fc.array(fc.constantFrom(...alphabet), { maxLength: longest }).map((chars) => chars.join(''))
  // Long runs of one valid character reach the length bound, which random strings seldom do.
  const edges = [0, 1, 2, 62, 63, 64, 65, 127, 128, 129].flatMap((length) => [
    'a'.repeat(length),
    `a${'-'.repeat(Math.max(length - 2, 0))}a`.slice(0, length),
  ])
  for (const value of edges) {
    if (accepts(crdNode, value) !== accepts(hookNode, value))
      throw new Error(
        `${JSON.stringify(value)}: the CRD ${accepts(crdNode, value) ? 'accepts' : 'refuses'} it, the hook does not`,
      )
  }
  fc.assert(
    fc.property(text, (value) => accepts(crdNode, value) === accepts(hookNode, value)),
    { numRuns: 3000 },
  )
}

const LOWER = 'az09-._A_'
const DATE_TIME_DIFFERENCE = [
  {
    keyword: 'format',
    crd: 'date-time',
    hook: undefined,
    why: "the API server's `format: date-time` is written for the hook as a pattern (src/patterns.ts, DATE_TIME; test/challenge/time.test.ts proves it lets through every date-time the API server stores)",
  },
  { keyword: 'pattern', crd: undefined, hook: DATE_TIME, why: 'the same date-time, as a pattern' },
] as const satisfies Allowed[]
const LABEL_BY_LENGTH = {
  keyword: 'maxLength',
  crd: 63,
  hook: undefined,
  why: "the CRD states a DNS label's 63 characters as a maxLength too (the API server bounds CEL costs by it); the hook's DNS_LABEL holds them in the pattern",
  holds: (crd: Schema, hook: Schema) => sameStrings(crd, hook, LOWER),
} as const satisfies Allowed
const LABEL_PATTERN = {
  keyword: 'pattern',
  crd: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
  hook: DNS_LABEL,
  why: 'a DNS label, its length in the maxLength beside it: the same strings as DNS_LABEL',
  holds: (crd: Schema, hook: Schema) => sameStrings(crd, hook, LOWER),
} as const satisfies Allowed
const ENV_NAME_BY_LENGTH = [
  {
    keyword: 'maxLength',
    crd: 128,
    hook: undefined,
    why: "the CRD states an environment variable name's 128 characters as a maxLength; ENV_NAME holds them in the pattern",
    holds: (crd: Schema, hook: Schema) => sameStrings(crd, hook, 'aZ_09-'),
  },
  {
    keyword: 'pattern',
    crd: '^[A-Za-z_][A-Za-z0-9_]*$',
    hook: ENV_NAME,
    why: 'an environment variable name, its length in the maxLength beside it: the same strings as ENV_NAME',
    holds: (crd: Schema, hook: Schema) => sameStrings(crd, hook, 'aZ_09-'),
  },
] as const satisfies Allowed[]

const SUBDOMAIN_BY_LENGTH = {
  keyword: 'pattern',
  crd: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
  hook: DNS_SUBDOMAIN,
  why: 'a DNS subdomain: the CRD bounds its length by the maxLength beside it, DNS_SUBDOMAIN by a lookahead as well',
  holds: (crd: Schema, hook: Schema) => sameStrings(crd, hook, 'az09-.'),
} as const satisfies Allowed

const ALLOWED: Record<string, readonly Allowed[]> = {
  'ChallengeDefinition.spec.flag.staticSecretRef.name': [SUBDOMAIN_BY_LENGTH],
  'ChallengeDefinition.spec.pod.containers[].env[].valueFrom.secretKeyRef.name': [SUBDOMAIN_BY_LENGTH],
  'ChallengeDefinition.spec.pod.imagePullSecrets[].name': [SUBDOMAIN_BY_LENGTH],
  // The hook refuses early what the pod's own validation would refuse later (a port name is an IANA service name):
  // the author reads why, instead of a bare StartupTimeout.
  'ChallengeDefinition.spec.pod.containers[].ports[].name': [
    {
      keyword: 'pattern',
      crd: undefined,
      hook: PORT_NAME,
      why: "the CRD stores a port's name as written (at most 15 characters); the hook refuses one the pod would not take",
    },
  ],
  // The CRD keeps a probe as written (x-kubernetes-preserve-unknown-fields); the hook checks its handler and timings.
  'ChallengeDefinition.spec.pod.containers[].readinessProbe': [
    {
      keyword: 'minProperties',
      crd: undefined,
      hook: 1,
      why: 'an empty probe is refused by the hook, which checks probes field by field',
    },
  ],
  'Challenge.spec.deadline': DATE_TIME_DIFFERENCE,
  'Challenge.spec.owner.id': [LABEL_BY_LENGTH],
  'ChallengeDefinition.spec.availableFrom': DATE_TIME_DIFFERENCE,
  'ChallengeDefinition.spec.availableUntil': DATE_TIME_DIFFERENCE,
  'ChallengeDefinition.spec.pod.containers[].name': [LABEL_BY_LENGTH, LABEL_PATTERN],
  'ChallengeDefinition.spec.security.runtimeClassName': [LABEL_BY_LENGTH, LABEL_PATTERN],
  'ChallengeDefinition.spec.pod.containers[].env[].name': ENV_NAME_BY_LENGTH,
  'ChallengeDefinition.spec.flag.env': ENV_NAME_BY_LENGTH,
}

interface Walked {
  differences: Difference[]
  /** Paths the hook checks and the CRD stores as written (under x-kubernetes-preserve-unknown-fields). */
  hookOnly: string[]
  /** Paths the CRD declares and the hook does not: never allowed. */
  crdOnly: string[]
  compared: number
  nodes: Map<string, [Schema, Schema]>
}

function walk(crd: Schema, hook: Schema, path: string, into: Walked): void {
  into.compared++
  into.nodes.set(path, [crd, hook])
  const [crdBounds, hookBounds] = [bounds(crd), bounds(hook)]
  for (const keyword of KEYWORDS) {
    if (JSON.stringify(crdBounds[keyword]) !== JSON.stringify(hookBounds[keyword])) {
      into.differences.push({ path, keyword, crd: crdBounds[keyword], hook: hookBounds[keyword] })
    }
  }
  const crdProperties = (crd.properties ?? {}) as Record<string, Schema>
  const hookProperties = (hook.properties ?? {}) as Record<string, Schema>
  for (const name of new Set([...Object.keys(crdProperties), ...Object.keys(hookProperties)])) {
    const [crdChild, hookChild] = [crdProperties[name], hookProperties[name]]
    if (crdChild !== undefined && hookChild !== undefined) walk(crdChild, hookChild, `${path}.${name}`, into)
    else if (crdChild !== undefined) into.crdOnly.push(`${path}.${name}`)
    else if (crd['x-kubernetes-preserve-unknown-fields'] === true) into.hookOnly.push(`${path}.${name}`)
    else into.crdOnly.push(`${path}.${name} (the API server would prune it, the hook checks it)`)
  }
  if (crd.items !== undefined || hook.items !== undefined)
    walk(crd.items as Schema, hook.items as Schema, `${path}[]`, into)
  // A map: the CRD's additionalProperties is the value schema of the hook's patternProperties.
  const hookMap = Object.values((hook.patternProperties ?? {}) as Record<string, Schema>)[0]
  if (typeof crd.additionalProperties === 'object' || hookMap !== undefined)
    walk(crd.additionalProperties as Schema, hookMap as Schema, `${path}{}`, into)
}

function walkBoth(): Walked {
  const into: Walked = { differences: [], hookOnly: [], crdOnly: [], compared: 0, nodes: new Map() }
  walk(crdSpec('challenges.yaml'), ChallengeSpecSchema, 'Challenge.spec', into)
  walk(crdSpec('challengedefinitions.yaml'), DefinitionSpecSchema, 'ChallengeDefinition.spec', into)
  return into
}

t.test("every bound of the CRDs is the hook's, or a difference that holds for its reason", async (t) => {
  const walked = walkBoth()
  t.ok(walked.compared > 50, `${walked.compared} fields compared`)
  const unexplained = walked.differences.filter(
    (d) =>
      !(ALLOWED[d.path] ?? []).some(
        (a) =>
          a.keyword === d.keyword &&
          JSON.stringify(a.crd) === JSON.stringify(d.crd) &&
          JSON.stringify(a.hook) === JSON.stringify(d.hook),
      ),
  )
  t.strictSame(unexplained, [], 'no difference the table does not explain')
  for (const [path, allowed] of Object.entries(ALLOWED)) {
    for (const each of allowed) {
      t.ok(
        walked.differences.some((d) => d.path === path && d.keyword === each.keyword),
        `${path} ${each.keyword}: still a difference (${each.why})`,
      )
      const [crd, hook] = walked.nodes.get(path) ?? [{}, {}]
      if (each.holds !== undefined)
        t.doesNotThrow(() => each.holds?.(crd, hook), `${path} ${each.keyword}: ${each.why}`)
    }
  }
  t.strictSame(walked.crdOnly, [], 'every field the CRDs declare, the hook declares too')
})

t.test('what only the hook checks: fields the CRDs keep as written', async (t) => {
  t.strictSame(walkBoth().hookOnly, [
    'ChallengeDefinition.spec.pod.containers[].resources.requests',
    'ChallengeDefinition.spec.pod.containers[].resources.limits',
    'ChallengeDefinition.spec.pod.containers[].readinessProbe.exec',
    'ChallengeDefinition.spec.pod.containers[].readinessProbe.httpGet',
    'ChallengeDefinition.spec.pod.containers[].readinessProbe.tcpSocket',
    'ChallengeDefinition.spec.pod.containers[].readinessProbe.grpc',
    'ChallengeDefinition.spec.pod.containers[].readinessProbe.initialDelaySeconds',
    'ChallengeDefinition.spec.pod.containers[].readinessProbe.periodSeconds',
    'ChallengeDefinition.spec.pod.containers[].readinessProbe.timeoutSeconds',
    'ChallengeDefinition.spec.pod.containers[].readinessProbe.successThreshold',
    'ChallengeDefinition.spec.pod.containers[].readinessProbe.failureThreshold',
    'ChallengeDefinition.spec.pod.containers[].securityContext',
  ])
})

t.test("the CRDs' CEL rules state the hook's Bounds and parameter names", async (t) => {
  const rules = (schema: Schema) =>
    ((schema['x-kubernetes-validations'] ?? []) as { rule: string }[]).map((each) => each.rule)
  const numbers = (rule: string) => [...rule.matchAll(/<= (\d+)/g)].map((match) => Number(match[1]))
  const definition = crdSpec('challengedefinitions.yaml')
  const pod = (definition.properties as Record<string, Schema>).pod as Schema
  t.strictSame(
    rules(pod).map(numbers),
    [[Bounds.podText], [Bounds.podEnvItems], [Bounds.podText]],
    'command and args, env variables, env values',
  )
  const parameters = (crdSpec('challenges.yaml').properties as Record<string, Schema>).parameters ?? {}
  const [names, , total] = rules(parameters) as [string, string, string]
  t.strictSame(numbers(total), [Bounds.parametersText], 'names and values together')
  const [, size, pattern] = /^self\.all\(k, size\(k\) <= (\d+) && k\.matches\('(.+)'\)\)$/.exec(names) ?? []
  t.doesNotThrow(
    () => sameStrings({ maxLength: Number(size), pattern }, { pattern: ENV_NAME }, 'aZ_09-'),
    'a parameter name is an ENV_NAME',
  )
  t.strictSame(
    Object.keys((ChallengeSpecSchema.properties.parameters as unknown as Schema).patternProperties as object),
    [ENV_NAME],
    "the hook's parameter names",
  )
})
