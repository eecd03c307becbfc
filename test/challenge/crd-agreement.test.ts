// The hook's schemas (src/contract/api.ts) and the CRDs' openAPIV3Schema (manifests/crds) state the same bounds:
// both are walked together, field by field, and every maxLength, minLength, maxItems, minItems, maxProperties,
// enum, pattern, format, minimum, maximum, type and required list must be equal, or be one of the differences
// below, each with its reason and a check that it holds. The CRD of definitions keeps no unknown field: a field it
// does not declare is pruned, and a Pod or Container field the contract forbids is declared with a rule that refuses
// it (`rule: "false"`), where the hook's schema leaves it out and refuses it as an unknown field. The CEL rules'
// numbers and key rules are the hook's Bounds and patterns.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import t from 'tap'
import { parse } from 'yaml'
import { Bounds, ChallengeSpecSchema, DATE_TIME, DefinitionSpecSchema, ENV_NAME } from '../../src/contract/api.js'
import { resolveDefinition } from '../../src/challenge/definition.js'
import { DNS_LABEL, DNS_SUBDOMAIN, PORT_NAME, RESOURCE_NAME } from '../../src/contract/patterns.js'
import { FORBIDDEN_FIELDS } from '../helpers/forbidden-fields.js'

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

/**
 * What a node states, in one form for both: a union of literals is an enum, lists are sorted, and a number or a
 * string (the CRD's x-kubernetes-int-or-string, the hook's union of an integer and a string) states the bounds of
 * both branches at once, as the CRD writes them.
 */
function bounds(schema: Schema): Partial<Record<Keyword, unknown>> {
  const anyOf = schema.anyOf as Schema[] | undefined
  const literals = anyOf?.every((branch) => 'const' in branch) === true ? anyOf : undefined
  const types = (anyOf ?? []).map((branch) => branch.type).sort()
  const intOrString = schema['x-kubernetes-int-or-string'] === true || JSON.stringify(types) === '["integer","string"]'
  const stated: Partial<Record<Keyword, unknown>> = {}
  for (const node of intOrString ? [schema, ...(anyOf ?? [])] : [schema]) {
    for (const keyword of KEYWORDS) {
      const value = node[keyword]
      if (value !== undefined) stated[keyword] = Array.isArray(value) ? [...value].sort() : value
    }
  }
  if (intOrString) stated.type = 'int-or-string'
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
    why: "the API server's `format: date-time` is written for the hook as a pattern (src/contract/patterns.ts, DATE_TIME; test/challenge/time.test.ts proves it lets through every date-time the API server stores)",
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
  /** Paths the CRD declares only to refuse them, and the hook refuses as unknown fields: the same refusal. */
  refused: Map<string, Schema>
  compared: number
  nodes: Map<string, [Schema, Schema]>
}

/** A node the CRD declares only to refuse it: its one rule is `false`. */
function isRefusal(node: Schema): boolean {
  const rules = (node['x-kubernetes-validations'] ?? []) as { rule: string }[]
  return rules.length === 1 && rules[0]?.rule === 'false'
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
    if (crdChild !== undefined && isRefusal(crdChild)) {
      if (hookChild === undefined && hook.additionalProperties === false) into.refused.set(`${path}.${name}`, crdChild)
      else into.crdOnly.push(`${path}.${name} (the CRD refuses it, the hook does not)`)
    } else if (crdChild !== undefined && hookChild !== undefined) walk(crdChild, hookChild, `${path}.${name}`, into)
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
  const into: Walked = { differences: [], hookOnly: [], crdOnly: [], refused: new Map(), compared: 0, nodes: new Map() }
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

t.test('nothing is kept as written: every field is declared, or pruned', async (t) => {
  t.strictSame(walkBoth().hookOnly, [], 'no field the hook checks and the CRD stores unchecked')
  const kept: string[] = []
  const visit = (node: Schema, path: string): void => {
    if (node['x-kubernetes-preserve-unknown-fields'] === true && !isRefusal(node)) kept.push(path)
    for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, Schema>))
      if (!isRefusal(child)) visit(child, `${path}.${name}`)
    if (node.items !== undefined) visit(node.items as Schema, `${path}[]`)
    if (typeof node.additionalProperties === 'object') visit(node.additionalProperties as Schema, `${path}{}`)
  }
  visit(crdSpec('challengedefinitions.yaml'), 'ChallengeDefinition.spec')
  visit(crdSpec('challenges.yaml'), 'Challenge.spec')
  t.strictSame(kept, [], 'no node keeps unknown fields, but the refused ones (whose values are refused whole)')
})

t.test('the fields the contract forbids: refused by the CRD, naming them, and by the hook', async (t) => {
  const refused = walkBoth().refused
  t.strictSame(
    [...refused.keys()].sort(),
    Object.entries(FORBIDDEN_FIELDS)
      .flatMap(([at, names]) => names.map((name) => `ChallengeDefinition.spec.${at}.${name}`))
      .sort(),
    'exactly these, each declared with a rule that refuses it',
  )
  for (const [path, node] of refused) {
    const message = ((node['x-kubernetes-validations'] as { message: string }[])[0] as { message: string }).message
    t.match(message, /^not allowed/, `${path}: the API server says it is not allowed`)
  }
  // A definition stored before the rules existed still reaches the hook with the field: DefinitionInvalid naming it.
  const values: Record<string, unknown> = { boolean: true, integer: 1, string: 'x', object: {}, array: [{}] }
  for (const [path, node] of refused) {
    const spec = withField(path.replace('ChallengeDefinition.spec.', ''), values[node.type as string])
    const result = resolveDefinition('web', spec)
    const field = `spec.${path.replace('ChallengeDefinition.spec.', '').replaceAll('[]', '[0]')}`
    t.strictSame(
      result.found ? 'accepted' : result.message,
      `ChallengeDefinition "web" is invalid: ${field}: is not allowed.`,
      `${path}: the hook refuses it too`,
    )
  }
})

/** A valid definition with `value` at `path` (dots and `[]` as the walk writes them), and what a path needs beside it. */
function withField(path: string, value: unknown): Schema {
  const spec: Schema = { pod: { containers: [{ name: 'web', image: 'web:1' }] }, expose: { port: 8080 } }
  const beside: Record<string, Schema> = {
    'ports[]': { containerPort: 8080 },
    httpGet: { port: 8080 },
    tcpSocket: { port: 8080 },
    grpc: { port: 8080 },
    'env[]': { name: 'SECRET' },
    secretKeyRef: { name: 'alice-web', key: 'password' },
  }
  const steps = path.split('.')
  let node: Schema = spec
  for (const [index, step] of steps.entries()) {
    const name = step.replace('[]', '')
    if (index === steps.length - 1) {
      node[name] = value
      break
    }
    const existing = node[name]
    if (step.endsWith('[]')) {
      const list = (existing ?? [{ ...beside[step] }]) as Schema[]
      node[name] = list
      node = list[0] as Schema
    } else {
      node[name] = existing ?? { ...beside[step] }
      node = node[name] as Schema
    }
  }
  return spec
}

t.test("the CRDs' CEL rules state the hook's Bounds and parameter names", async (t) => {
  const rules = (schema: Schema) =>
    ((schema['x-kubernetes-validations'] ?? []) as { rule: string }[]).map((each) => each.rule)
  const numbers = (rule: string) => [...rule.matchAll(/<= (\d+)/g)].map((match) => Number(match[1]))
  const definition = crdSpec('challengedefinitions.yaml')
  const pod = (definition.properties as Record<string, Schema>).pod as Schema
  t.strictSame(
    rules(pod).map(numbers),
    [[Bounds.podText], [Bounds.podEnvItems], [Bounds.podText], [Bounds.podResourceNames]],
    'command and args, env variables, env values, resource names',
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

t.test("a container's resource names: the CRD's key rule is the hook's RESOURCE_NAME", async (t) => {
  const nodes = walkBoth().nodes
  for (const list of ['requests', 'limits']) {
    const [crd, hook] = nodes.get(`ChallengeDefinition.spec.pod.containers[].resources.${list}`) ?? [{}, {}]
    const [rule] = ((crd['x-kubernetes-validations'] ?? []) as { rule: string }[]).map((each) => each.rule)
    const [, size, pattern] = /^self\.all\(k, size\(k\) <= (\d+) && k\.matches\('(.+)'\)\)$/.exec(rule ?? '') ?? []
    t.doesNotThrow(
      () => sameStrings({ maxLength: Number(size), pattern }, { pattern: RESOURCE_NAME }, 'az09-./A'),
      `${list}: a key is a RESOURCE_NAME`,
    )
    t.strictSame(Object.keys(hook.patternProperties as object), [RESOURCE_NAME], `${list}: the hook's keys`)
  }
})
