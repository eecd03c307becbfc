// Our two CRDs: structural, the contract's fields with their validation and
// defaults, CEL rules where the contract asks for them, and the examples valid
// while deliberately broken copies are not.
import { join } from 'node:path'
import t from 'tap'
import { Ajv } from 'ajv'
import {
  loadCrdSchema,
  manifestsDir,
  readYamlDocuments,
  toAjvSchema,
  validateAgainstCrd,
  type Schema,
} from '../helpers/manifests.js'

interface Crd {
  metadata: { name: string }
  spec: {
    group: string
    scope: string
    names: { kind: string; plural: string; singular: string; shortNames: string[] }
    versions: {
      name: string
      served: boolean
      storage: boolean
      subresources?: { status?: object }
      additionalPrinterColumns?: { name: string; type: string; jsonPath: string }[]
      schema: { openAPIV3Schema: Schema }
    }[]
  }
}

const crds = ['challengedefinitions.yaml', 'challenges.yaml'].map(
  (file) => readYamlDocuments(join(manifestsDir, 'crds', file))[0] as Crd,
)
const examples = ['web-login.yaml', 'pwn-echo.yaml', 'tls/pwn-tls.yaml'].flatMap((file) =>
  readYamlDocuments(join(manifestsDir, 'examples', file)),
) as { kind: string; metadata: { name: string; labels: Record<string, string> }; spec: Record<string, unknown> }[]

/** The subschema at a dotted path of property names ('spec.owner.id'); '[]' steps into array items. */
function at(schema: Schema, path: string): Schema {
  let node = schema
  for (const step of path.split('.')) {
    const next = step === '[]' ? node.items : (node.properties as Record<string, Schema> | undefined)?.[step]
    if (next === undefined) throw new Error(`no ${step} in the schema at ${path}`)
    node = next as Schema
  }
  return node
}

/** Every subschema, with its path. */
function walk(schema: Schema, path = ''): [string, Schema][] {
  const children = Object.entries((schema.properties as Record<string, Schema> | undefined) ?? {}).map(
    ([name, child]) => [`${path}.${name}`, child] as [string, Schema],
  )
  if (schema.items !== undefined) children.push([`${path}[]`, schema.items as Schema])
  if (typeof schema.additionalProperties === 'object')
    children.push([`${path}{}`, schema.additionalProperties as Schema])
  return [[path, schema], ...children.flatMap(([p, s]) => walk(s, p))]
}

/** A field declared only to be refused: its one rule is `false` (the API server says why, naming the field). */
function isRefusal(node: Schema): boolean {
  const rules = (node['x-kubernetes-validations'] ?? []) as { rule: string }[]
  return rules.length === 1 && rules[0]?.rule === 'false'
}

/** The fields an object may hold: those it declares and does not refuse, sorted. */
function allowed(node: Schema): string[] {
  return Object.entries((node.properties ?? {}) as Record<string, Schema>)
    .filter(([, child]) => !isRefusal(child))
    .map(([name]) => name)
    .sort()
}

const definitionSchema = loadCrdSchema('ChallengeDefinition')
const challengeSchema = loadCrdSchema('Challenge')

t.test('both CRDs: group, names, namespaced, one served storage version with status subresource', async (t) => {
  const expected = [
    ['ChallengeDefinition', 'challengedefinitions', 'chaldef'],
    ['Challenge', 'challenges', 'chal'],
  ]
  for (const [i, crd] of crds.entries()) {
    const [kind, plural, short] = expected[i] as [string, string, string]
    t.equal(crd.metadata.name, `${plural}.challenge-hooks.dev`)
    t.equal(crd.spec.group, 'challenge-hooks.dev')
    t.equal(crd.spec.scope, 'Namespaced')
    t.match(crd.spec.names, { kind, plural, shortNames: [short] })
    t.equal(crd.spec.versions.length, 1)
    t.match(crd.spec.versions[0], { name: 'v1alpha1', served: true, storage: true, subresources: { status: {} } })
  }
})

t.test('schemas are structural and every default is valid for its own field', async (t) => {
  const ajv = new Ajv({ strict: false, logger: false })
  for (const [kind, schema] of [
    ['ChallengeDefinition', definitionSchema],
    ['Challenge', challengeSchema],
  ] as const) {
    for (const [path, node] of walk(schema)) {
      const typed = node.type !== undefined || node['x-kubernetes-int-or-string'] === true
      t.ok(typed || node['x-kubernetes-preserve-unknown-fields'] === true, `${kind}${path} has a type`)
      if (node['x-kubernetes-list-type'] === 'map') {
        const keys = node['x-kubernetes-list-map-keys'] as string[]
        t.ok(
          keys.every((k) => (at(node, '[]').required as string[]).includes(k)),
          `${kind}${path} map keys are required`,
        )
      }
      if (node.default !== undefined) {
        t.ok(ajv.validate(toAjvSchema(node), node.default), `${kind}${path} default ${JSON.stringify(node.default)}`)
      }
    }
    t.strictSame(at(schema, 'metadata'), { type: 'object' }, `${kind} metadata is left to the API server`)
  }
})

t.test('ChallengeDefinition spec: the contract fields, validation and defaults', async (t) => {
  const spec = at(definitionSchema, 'spec')
  t.strictSame(spec.required, ['pod', 'expose'])
  t.strictSame(Object.keys(spec.properties as object).sort(), [
    'availableFrom',
    'availableUntil',
    'cost',
    'displayName',
    'expose',
    'flag',
    'lifetimeSeconds',
    'maxRenewals',
    'network',
    'pod',
    'pool',
    'prepull',
    'security',
    'startupTimeoutSeconds',
  ])
  // Quoted in the YAML: a YAML 1.1 reader (kubectl's) would read a bare Off as false.
  t.strictSame(at(spec, 'prepull').enum, ['Off', 'Pull', 'Hold'])
  t.match(at(spec, 'displayName'), { type: 'string', maxLength: 128 })
  t.match(at(spec, 'pod'), { type: 'object', required: ['containers'] })
  t.strictSame(allowed(at(spec, 'pod')), ['containers', 'imagePullSecrets'], 'a pod holds containers and pull Secrets')
  const containers = at(spec, 'pod.containers')
  t.match(containers, { type: 'array', minItems: 1, maxItems: 8 })
  t.match(at(containers, '[]'), { type: 'object', required: ['name', 'image'] })
  t.strictSame(allowed(at(containers, '[]')), [
    'args',
    'command',
    'env',
    'image',
    'name',
    'ports',
    'readinessProbe',
    'resources',
    'securityContext',
  ])
  t.match(at(containers, '[].command'), { type: 'array', items: { type: 'string' } })
  t.match(at(containers, '[].args'), { type: 'array', items: { type: 'string' } })
  t.strictSame(allowed(at(containers, '[].env.[]')), ['name', 'value', 'valueFrom'])
  t.strictSame(allowed(at(containers, '[].env.[].valueFrom')), ['secretKeyRef'])
  t.strictSame(allowed(at(containers, '[].env.[].valueFrom.secretKeyRef')), ['key', 'name'])
  t.strictSame(allowed(at(containers, '[].ports.[]')), ['containerPort', 'name', 'protocol'])
  t.strictSame(allowed(at(containers, '[].resources')), ['limits', 'requests'])
  t.strictSame(allowed(at(containers, '[].securityContext')), ['runAsGroup', 'runAsUser'])
  t.strictSame(allowed(at(containers, '[].readinessProbe')), [
    'exec',
    'failureThreshold',
    'grpc',
    'httpGet',
    'initialDelaySeconds',
    'periodSeconds',
    'successThreshold',
    'tcpSocket',
    'timeoutSeconds',
  ])
  const refused = walk(at(spec, 'pod'), 'spec.pod').filter(([, node]) => isRefusal(node))
  t.strictSame(
    walk(at(spec, 'pod'), 'spec.pod')
      .filter(([path]) => !refused.some(([above]) => path === above || path.startsWith(`${above}[]`)))
      .filter(([, node]) => 'x-kubernetes-preserve-unknown-fields' in node)
      .map(([path]) => path),
    [],
    'no field of the pod keeps unknown fields, but those refused whole',
  )
  t.match(at(spec, 'expose'), { required: ['port'] })
  t.match(at(spec, 'expose.type'), { enum: ['HTTP', 'TLS', 'NodePort', 'LoadBalancer', 'Internal'], default: 'HTTP' })
  t.match(at(spec, 'expose.container'), { type: 'string' })
  t.match(at(spec, 'expose.port'), { type: 'integer', minimum: 1, maximum: 65535 })
  t.match(at(spec, 'lifetimeSeconds'), { type: 'integer', minimum: 60, maximum: 86400, default: 1800 })
  t.match(at(spec, 'startupTimeoutSeconds'), { type: 'integer', minimum: 30, maximum: 1800, default: 300 })
  t.match(at(spec, 'maxRenewals'), { type: 'integer', minimum: 0, maximum: 20, default: 2 })
  t.match(at(spec, 'cost'), { type: 'integer', minimum: 0, maximum: 100, default: 1 })
  t.match(at(spec, 'availableFrom'), { type: 'string', format: 'date-time' })
  t.match(at(spec, 'availableUntil'), { type: 'string', format: 'date-time' })
  t.match(at(spec, 'network'), { default: {} })
  t.match(at(spec, 'network.egress'), { enum: ['None', 'DNS', 'Internet'], default: 'DNS' })
  t.match(at(spec, 'security'), { default: {} })
  t.match(at(spec, 'security.profile'), { enum: ['Restricted', 'Baseline'], default: 'Restricted' })
  t.match(at(spec, 'security.runtimeClassName'), { maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' })
  t.notOk('default' in at(spec, 'security.runtimeClassName'), 'runtimeClassName is omitted from the pod when unset')
  t.match(at(spec, 'flag'), { default: {} })
  t.match(at(spec, 'flag.mode'), { enum: ['PerOwner', 'PerInstance', 'Static'], default: 'PerOwner' })
  t.match(at(spec, 'flag.prefix'), { type: 'string', default: 'flag{' })
  t.match(at(spec, 'flag.suffix'), { type: 'string', default: '}' })
  t.match(at(spec, 'flag.env'), { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', default: 'FLAG' })
  t.match(at(spec, 'flag.staticSecretRef'), { type: 'object', required: ['name', 'key'] })
})

t.test('Challenge spec: the contract fields, validation and defaults', async (t) => {
  const spec = at(challengeSchema, 'spec')
  t.strictSame(spec.required, ['definitionRef', 'owner'])
  t.strictSame(Object.keys(spec.properties as object).sort(), [
    'deadline',
    'definitionRef',
    'desiredState',
    'lifetimeSeconds',
    'owner',
    'parameters',
    'renewals',
    'restarts',
    'stopReason',
  ])
  t.match(at(spec, 'definitionRef'), { required: ['name'] })
  t.match(at(spec, 'owner'), { required: ['kind', 'id'] })
  t.match(at(spec, 'owner.kind'), { enum: ['User', 'Team'] })
  t.match(at(spec, 'owner.id'), { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$' })
  t.match(at(spec, 'desiredState'), { enum: ['Running', 'Stopped'], default: 'Running' })
  t.match(at(spec, 'stopReason'), { type: 'string', maxLength: 64 })
  t.match(at(spec, 'lifetimeSeconds'), { type: 'integer', minimum: 60, maximum: 86400 })
  t.notOk('default' in at(spec, 'lifetimeSeconds'), "lifetimeSeconds defaults to the definition's, not in the schema")
  t.match(at(spec, 'deadline'), { type: 'string', format: 'date-time' })
  t.match(at(spec, 'renewals'), { type: 'integer', minimum: 0, default: 0 })
  t.match(at(spec, 'restarts'), { type: 'integer', minimum: 0, default: 0 })
  t.match(at(spec, 'parameters'), { type: 'object', maxProperties: 16, additionalProperties: { type: 'string' } })
})

t.test('CEL rules: immutability, only-grow counters, parameter names', async (t) => {
  const spec = at(challengeSchema, 'spec')
  const rules = (path: string) => (at(spec, path)['x-kubernetes-validations'] as { rule: string }[]).map((v) => v.rule)
  t.strictSame(rules('definitionRef'), ['self == oldSelf'])
  t.strictSame(rules('owner'), ['self == oldSelf'])
  t.strictSame(rules('renewals'), ['self >= oldSelf'])
  t.strictSame(rules('restarts'), ['self >= oldSelf'])
  t.strictSame(rules('parameters'), [
    "self.all(k, size(k) <= 128 && k.matches('^[A-Za-z_][A-Za-z0-9_]*$'))",
    "!self.exists(k, k in ['__proto__', 'constructor', 'prototype'])",
    'self.map(k, size(k) + size(self[k])).sum() <= 4096',
  ])
  const rulesAt = (path: string) =>
    (at(definitionSchema, path)['x-kubernetes-validations'] as { rule: string }[]).map((v) => v.rule)
  t.strictSame(rulesAt('spec'), [
    '!has(self.expose.container) || self.pod.containers.exists(c, c.name == self.expose.container)',
    "!has(self.pool) || !has(self.pool.size) || self.pool.size == 0 || !has(self.flag) || !has(self.flag.mode) || self.flag.mode != 'PerOwner'",
  ])
  t.strictSame(rulesAt('spec.pool'), ['!has(self.maxPods) || !has(self.size) || self.maxPods >= self.size'])
  t.match(at(definitionSchema, 'spec.pool.size'), { type: 'integer', minimum: 0, maximum: 100 })
  t.match(at(definitionSchema, 'spec.pool.maxPods'), { type: 'integer', minimum: 1, maximum: 1000 })
  t.strictSame(rulesAt('spec.flag'), ["!has(self.mode) || self.mode != 'Static' || has(self.staticSecretRef)"])
  // The pod's totals (Bounds in src/contract/api.ts): the hook checks the same numbers.
  t.strictSame(rulesAt('spec.pod'), [
    'self.containers.map(c, (has(c.command) ? c.command.map(w, size(w)).sum() : 0) + (has(c.args) ? c.args.map(w, size(w)).sum() : 0)).sum() <= 16384',
    'self.containers.map(c, has(c.env) ? size(c.env) : 0).sum() <= 128',
    'self.containers.map(c, has(c.env) ? c.env.map(e, has(e.value) ? size(e.value) : 0).sum() : 0).sum() <= 16384',
    'self.containers.map(c, !has(c.resources) ? 0 : (has(c.resources.requests) ? size(c.resources.requests) : 0) + (has(c.resources.limits) ? size(c.resources.limits) : 0)).sum() <= 64',
  ])
  // A probe has one handler (the hook refuses the others too, as the pod's validation would).
  t.strictSame(rulesAt('spec.pod.containers.[].readinessProbe'), [
    '[has(self.exec), has(self.httpGet), has(self.tcpSocket), has(self.grpc)].filter(h, h).size() == 1',
  ])
  // The resource names of a container's requests and limits.
  const keys = "self.all(k, size(k) <= 253 && k.matches('^[a-z0-9]([-a-z0-9./]*[a-z0-9])?$'))"
  t.strictSame(rulesAt('spec.pod.containers.[].resources.requests'), [keys])
  t.strictSame(rulesAt('spec.pod.containers.[].resources.limits'), [keys])
  const everyRule = [definitionSchema, challengeSchema].flatMap((s) =>
    walk(s)
      .filter(([, node]) => !isRefusal(node))
      .flatMap(([, node]) => (node['x-kubernetes-validations'] as { message?: string }[] | undefined) ?? []),
  )
  t.equal(everyRule.length, 18, 'no other CEL rule but the refusals')
  t.ok(
    everyRule.every((rule) => typeof rule.message === 'string' && rule.message.length > 0),
    'every rule has a message',
  )
})

t.test('Challenge status declares every field the hook writes, nothing unknown', async (t) => {
  const status = at(challengeSchema, 'status')
  t.notOk('x-kubernetes-preserve-unknown-fields' in status)
  t.strictSame(Object.keys(status.properties as object).sort(), [
    'admittedAt',
    'conditions',
    'cost',
    'definitionAuthor',
    'endpoint',
    'expiresAt',
    'finishedAt',
    'flagSecretRef',
    'instanceId',
    'lastRenewedAt',
    'message',
    'observedGeneration',
    'phase',
    'pool',
    'reason',
    'renewalsApplied',
    'renewalsSeen',
    'run',
    'startedAt',
  ])
  t.strictSame(Object.keys(at(status, 'pool').properties as object).sort(), ['flagUid', 'pod', 'run', 'since', 'state'])
  t.match(at(status, 'pool.state'), { enum: ['Waiting', 'Claimed', 'Cold', 'Released'] })
  t.match(at(status, 'phase'), { enum: ['Pending', 'Running', 'Error', 'Deleted', 'Terminating'] })
  t.strictSame(
    Object.keys(at(status, 'definitionAuthor')).sort(),
    ['description', 'type'],
    'definitionAuthor: any text (the empty string too), no bound the hook could overstep with an author an operator wrote',
  )
  t.equal(at(status, 'definitionAuthor').type, 'string')
  t.strictSame(Object.keys(at(status, 'endpoint').properties as object).sort(), [
    'connection',
    'host',
    'port',
    'type',
    'url',
  ])
  t.match(at(status, 'endpoint.port'), { type: 'integer' })
  for (const time of ['admittedAt', 'startedAt', 'lastRenewedAt', 'finishedAt', 'expiresAt']) {
    t.match(at(status, time), { type: 'string', format: 'date-time' }, time)
  }
  for (const counter of ['renewalsSeen', 'renewalsApplied', 'run'])
    t.match(at(status, counter), { type: 'integer' }, counter)
  t.match(at(status, 'flagSecretRef.name'), { type: 'string' })
  t.match(at(status, 'conditions'), { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] })
  t.strictSame(Object.keys(at(status, 'conditions.[]').properties as object).sort(), [
    'lastTransitionTime',
    'message',
    'reason',
    'status',
    'type',
  ])
  t.match(at(status, 'conditions.[].status'), { enum: ['True', 'False', 'Unknown'] })
  t.match(at(status, 'observedGeneration'), { type: 'integer', format: 'int64' })

  const running = {
    phase: 'Running',
    reason: 'Ready',
    message: 'Your instance is ready.',
    instanceId: '0123456789abcdef',
    endpoint: {
      type: 'HTTP',
      host: '0123456789abcdef.challenges.localhost',
      port: 443,
      url: 'https://0123456789abcdef.challenges.localhost/',
      connection: 'https://0123456789abcdef.challenges.localhost/',
    },
    admittedAt: '2026-11-22T10:00:00Z',
    startedAt: '2026-11-22T10:00:20Z',
    lastRenewedAt: '2026-11-22T10:20:00Z',
    expiresAt: '2026-11-22T10:50:00Z',
    renewalsSeen: 1,
    renewalsApplied: 1,
    run: 0,
    flagSecretRef: { name: 'web-login-u-alice-flag' },
    conditions: [
      { type: 'Ready', status: 'True', reason: 'Ready', message: 'Ready.', lastTransitionTime: '2026-11-22T10:00:20Z' },
      {
        type: 'RenewalAccepted',
        status: 'True',
        reason: 'Renewed',
        message: 'Extended.',
        lastTransitionTime: '2026-11-22T10:20:00Z',
      },
    ],
    observedGeneration: 3,
  }
  t.strictSame(validateAgainstCrd('Challenge', running, { at: 'status' }), [])
  t.strictSame(
    validateAgainstCrd(
      'Challenge',
      { phase: 'Deleted', reason: 'Solved', finishedAt: '2026-11-22T10:30:00Z' },
      { at: 'status' },
    ),
    [],
  )
  t.strictSame(
    validateAgainstCrd(
      'Challenge',
      { ...running, phase: 'Starting', lastSyncTime: 'now', conditions: [{ type: 'Ready', status: 'yes' }] },
      { at: 'status' },
    ),
    [
      '/ must NOT have additional properties (lastSyncTime)',
      '/phase must be equal to one of the allowed values (Pending,Running,Error,Deleted,Terminating)',
      '/conditions/0/status must be equal to one of the allowed values (True,False,Unknown)',
    ],
  )
})

t.test('printer columns', async (t) => {
  const columns = (i: number) =>
    crds[i]?.spec.versions[0]?.additionalPrinterColumns?.map((c) => [c.name, c.type, c.jsonPath])
  t.strictSame(
    columns(1)?.filter(([name]) => name !== 'Reason'),
    [
      ['Owner', 'string', '.spec.owner.id'],
      ['Definition', 'string', '.spec.definitionRef.name'],
      ['Phase', 'string', '.status.phase'],
      ['Endpoint', 'string', '.status.endpoint.connection'],
      ['Expires', 'string', '.status.expiresAt'],
      ['Deadline', 'string', '.spec.deadline'],
      ['Age', 'date', '.metadata.creationTimestamp'],
    ],
  )
  t.match(columns(0), [
    ['Display Name'],
    ['Expose', 'string', '.spec.expose.type'],
    ['Port'],
    ['Lifetime', 'integer', '.spec.lifetimeSeconds'],
  ])
})

t.test('printer columns: only times in the past print as an age', async (t) => {
  // kubectl prints a `date` column as an age ("5m"), and a time in the future as <invalid>. Every time a column
  // shows is therefore either set once in the past (creation) or printed as the RFC 3339 value it holds.
  const past = new Set(['.metadata.creationTimestamp'])
  const times = new Set<string>()
  for (const schema of [definitionSchema, challengeSchema]) {
    for (const [path, node] of walk(schema)) if (node.format === 'date-time') times.add(path)
  }
  t.ok(
    ['.spec.deadline', '.status.expiresAt', '.spec.availableUntil', '.spec.availableFrom'].every((path) =>
      times.has(path),
    ),
    'the future times are date-time fields',
  )
  for (const crd of crds) {
    for (const column of crd.spec.versions[0]?.additionalPrinterColumns ?? []) {
      if (column.type === 'date')
        t.ok(past.has(column.jsonPath), `${crd.spec.names.kind} ${column.name}: a date column only for a past time`)
      if (times.has(column.jsonPath))
        t.equal(
          column.type,
          'string',
          `${crd.spec.names.kind} ${column.name} (${column.jsonPath}) prints its RFC 3339 value`,
        )
    }
  }
  const shown = (kind: string) =>
    crds
      .find((crd) => crd.spec.names.kind === kind)
      ?.spec.versions[0]?.additionalPrinterColumns?.map((column) => column.jsonPath) ?? []
  t.ok(
    shown('Challenge').includes('.status.expiresAt') && shown('Challenge').includes('.spec.deadline'),
    'Challenge shows expiresAt and deadline',
  )
  t.ok(
    shown('ChallengeDefinition').includes('.spec.availableFrom') &&
      shown('ChallengeDefinition').includes('.spec.availableUntil'),
    'ChallengeDefinition shows availableFrom and availableUntil',
  )
})

t.test('examples: one definition and one Challenge per challenge, valid against our CRDs', async (t) => {
  t.strictSame(
    examples.map((o) => `${o.kind}/${o.metadata.name}`),
    [
      'ChallengeDefinition/web-login',
      'Challenge/web-login.u.alice',
      'ChallengeDefinition/pwn-echo',
      'Challenge/pwn-echo.u.alice',
      'ChallengeDefinition/pwn-tls',
      'Challenge/pwn-tls.u.alice',
    ],
  )
  for (const object of examples)
    t.strictSame(validateAgainstCrd(object.kind, object), [], `${object.kind}/${object.metadata.name}`)
  for (const challenge of examples.filter((o) => o.kind === 'Challenge')) {
    const spec = challenge.spec as { definitionRef: { name: string }; owner: { kind: string; id: string } }
    t.equal(challenge.metadata.name, `${spec.definitionRef.name}.u.${spec.owner.id}`, 'named <definition>.u.<owner id>')
    t.strictSame(spec.owner, { kind: 'User', id: 'alice' })
    t.strictSame(challenge.metadata.labels, {
      'challenge-hooks.dev/owner': 'alice',
      'challenge-hooks.dev/definition': spec.definitionRef.name,
    })
  }
  t.match(examples[0]?.spec, {
    expose: { type: 'HTTP', port: 8080 },
    pod: { containers: [{ ports: [{ containerPort: 8080 }], readinessProbe: { httpGet: {} } }] },
  })
  t.match(examples[2]?.spec, {
    expose: { type: 'NodePort', port: 1337 },
    network: { egress: 'None' },
    pod: { containers: [{ ports: [{ containerPort: 1337 }] }] },
  })
  t.match(examples[4]?.spec, {
    expose: { type: 'TLS', port: 1337 },
    network: { egress: 'None' },
    pod: { containers: [{ ports: [{ containerPort: 1337 }] }] },
  })
})

t.test('the validation bites: broken copies of the examples are refused', async (t) => {
  const [definition, challenge] = examples as unknown as [Record<string, unknown>, Record<string, unknown>]
  const withSpec = (object: Record<string, unknown>, change: (spec: Record<string, any>) => void) => {
    const copy = structuredClone(object) as { spec: Record<string, any> }
    change(copy.spec)
    return copy
  }
  const container = { name: 'c', image: 'registry.example/c:1' }
  const definitionCases: [string, (spec: Record<string, any>) => void, RegExp][] = [
    ['missing image', (s) => delete s.pod.containers[0].image, /must have required property 'image'/],
    [
      '9 containers',
      (s) => (s.pod.containers = Array.from({ length: 9 }, (_, i) => ({ ...container, name: `c${i}` }))),
      /must NOT have more than 8 items/,
    ],
    ['no container', (s) => (s.pod.containers = []), /must NOT have fewer than 1 items/],
    ['unknown expose.type', (s) => (s.expose.type = 'UDP'), /expose\/type must be equal to one of the allowed values/],
    ['expose.port 0', (s) => (s.expose.port = 0), /expose\/port must be >= 1/],
    ['lifetime too long', (s) => (s.lifetimeSeconds = 86401), /lifetimeSeconds must be <= 86400/],
    ['bad flag.env', (s) => (s.flag.env = 'MY-FLAG'), /flag\/env must match pattern/],
    [
      'bad runtimeClassName',
      (s) => (s.security = { runtimeClassName: 'gVisor' }),
      /runtimeClassName must match pattern/,
    ],
    ['unknown spec field', (s) => (s.replicas = 3), /must NOT have additional properties \(replicas\)/],
    [
      'displayName too long',
      (s) => (s.displayName = 'x'.repeat(129)),
      /displayName must NOT have more than 128 characters/,
    ],
  ]
  for (const [name, change, error] of definitionCases) {
    t.match(validateAgainstCrd('ChallengeDefinition', withSpec(definition, change)).join('\n'), error, name)
  }
  const challengeCases: [string, (spec: Record<string, any>) => void, RegExp][] = [
    ['bad owner.id', (s) => (s.owner.id = 'Alice!'), /owner\/id must match pattern/],
    ['owner.id too long', (s) => (s.owner.id = 'a'.repeat(64)), /owner\/id must (match pattern|NOT have more than 63)/],
    ['unknown owner.kind', (s) => (s.owner.kind = 'Org'), /owner\/kind must be equal to one of the allowed values/],
    ['negative renewals', (s) => (s.renewals = -1), /renewals must be >= 0/],
    ['negative restarts', (s) => (s.restarts = -1), /restarts must be >= 0/],
    [
      '17 parameters',
      (s) => (s.parameters = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`P${i}`, 'v']))),
      /parameters must NOT have more than 16 properties/,
    ],
    ['parameter value not a string', (s) => (s.parameters = { PORT: 8080 }), /parameters\/PORT must be string/],
    ['bad deadline', (s) => (s.deadline = 'tomorrow'), /deadline must match format "date-time"/],
    ['stopReason too long', (s) => (s.stopReason = 'x'.repeat(65)), /stopReason must NOT have more than 64 characters/],
    [
      'unknown desiredState',
      (s) => (s.desiredState = 'Paused'),
      /desiredState must be equal to one of the allowed values/,
    ],
    ['missing definitionRef', (s) => delete s.definitionRef, /must have required property 'definitionRef'/],
  ]
  for (const [name, change, error] of challengeCases) {
    t.match(validateAgainstCrd('Challenge', withSpec(challenge, change)).join('\n'), error, name)
  }
})

t.test('what breaks the security profile is declared to be refused; anything unknown is not kept', async (t) => {
  const pod = at(definitionSchema, 'spec.pod')
  for (const path of [
    'hostNetwork',
    'hostPID',
    'volumes',
    'containers.[].securityContext.privileged',
    'containers.[].securityContext.capabilities',
    'containers.[].volumeMounts',
    'containers.[].ports.[].hostPort',
    'containers.[].readinessProbe.httpGet.host',
  ])
    t.ok(isRefusal(at(pod, path)), `spec.pod.${path}: refused by a rule of its own`)
  const [definition] = examples as unknown as [{ spec: { pod: Record<string, unknown> } }]
  const padded = structuredClone(definition)
  padded.spec.pod.padding = 'x'.repeat(1000)
  // The API server prunes an unknown field (and kubectl's strict field validation reports it): never stored.
  t.strictSame(validateAgainstCrd('ChallengeDefinition', padded), [
    '/spec/pod must NOT have additional properties (padding)',
  ])
})
