// A definition holds what the contract lists and nothing more, on a real API server: a field Kubernetes does not
// know is pruned, never stored (kubectl's default strict field validation refuses the write); each Pod and Container
// field the contract forbids is refused naming it, whatever the field validation asks for; the largest definition
// the CRD accepts is stored whole and measured. The forbidden fields are checked against the API server's own Pod
// and Container types: each of their fields is the contract's, refused, or one of the two left undeclared below.
import t from 'tap'
import { FORBIDDEN_FIELDS } from '../helpers/forbidden-fields.js'
import { largestStoredDefinitionSpec } from '../helpers/largest.js'
import { loadCrdSchema, type Schema } from '../helpers/manifests.js'
import { ApiError } from '../support/simulator/index.js'
import { kubectlOk } from '../support/kube/kubectl.js'
import { API, connect, createNamespace, install, type Json } from '../support/kube/harness.js'

const env = await connect(t)
await install(env)
const ns = await createNamespace(env, t, 'bounded')
const definitions = `/apis/${API}/namespaces/${ns}/challengedefinitions`

/** What the issue measured: 1.4 MB of padding, stored and cached cluster-wide. */
const PADDING = 'x'.repeat(1_400_000)

function definition(name: string, spec: Json = {}): Json {
  return {
    apiVersion: API,
    kind: 'ChallengeDefinition',
    metadata: { name },
    spec: {
      pod: {
        containers: [
          {
            name: 'app',
            image: 'registry.test/app:1',
            env: [{ name: 'A', value: 'a' }],
            ports: [{ containerPort: 8080 }],
            resources: { limits: { cpu: '1' } },
            readinessProbe: { tcpSocket: { port: 8080 } },
            securityContext: { runAsUser: 1000 },
          },
        ],
      },
      expose: { port: 8080 },
      ...spec,
    },
  }
}

/** `value` set at `path` (dots and `[0]`) of a copy of `object`, creating what is missing on the way. */
function withValue(object: Json, path: string, value: unknown): Json {
  const copy = structuredClone(object)
  const steps = path.split('.').flatMap((step) => step.split(/\[(\d+)\]/).filter((part) => part !== ''))
  let node = copy as Record<string, unknown>
  for (const [index, step] of steps.entries()) {
    if (index === steps.length - 1) node[step] = value
    else {
      node[step] ??= /^\d+$/.test(steps[index + 1] as string) ? [] : {}
      node = node[step] as Record<string, unknown>
    }
  }
  return copy
}

type Validation = 'Strict' | 'Warn' | 'Ignore'

/** A create with `fieldValidation`: what was stored, or the refusal, and the warnings it drew. */
async function create(
  body: Json,
  fieldValidation: Validation,
  dryRun = false,
): Promise<{ stored?: Json; refused?: { status: number; message: string }; warnings: string[] }> {
  const before = env.rest.warnings.length
  try {
    const stored = (await env.rest.call('POST', definitions, {
      body,
      query: { fieldValidation, dryRun: dryRun ? 'All' : undefined },
    })) as Json
    return { stored, warnings: env.rest.warnings.slice(before).map((w) => w.warning) }
  } catch (error) {
    if (!(error instanceof ApiError)) throw error
    return {
      refused: { status: error.status, message: error.message },
      warnings: env.rest.warnings.slice(before).map((w) => w.warning),
    }
  }
}

const PADDED = [
  'spec.pod',
  'spec.pod.containers[0]',
  'spec.pod.containers[0].env[0]',
  'spec.pod.containers[0].ports[0]',
  'spec.pod.containers[0].resources',
  'spec.pod.containers[0].readinessProbe',
  'spec.pod.containers[0].readinessProbe.tcpSocket',
  'spec.pod.containers[0].securityContext',
  'spec',
]

t.test('1.4 MB of padding under a field nobody declared is never stored', async (t) => {
  const plain = definition('plain')
  for (const [index, at] of PADDED.entries()) {
    const padded = withValue(definition(`padded-${index}`), `${at}.padding`, PADDING)
    const strict = await create(padded, 'Strict')
    t.strictSame(
      strict.refused,
      {
        status: 400,
        message: `ChallengeDefinition in version "v1alpha1" cannot be handled as a ChallengeDefinition: strict decoding error: unknown field "${at}.padding"`,
      },
      `${at}.padding, Strict (kubectl's default): refused, naming the field`,
    )
    for (const validation of ['Warn', 'Ignore'] as const) {
      const name = `padded-${index}-${validation.toLowerCase()}`
      const written = await create(withValue(padded, 'metadata.name', name), validation)
      const stored = await env.rest.get<Json>(`${definitions}/${name}`)
      t.strictSame(stored.spec, await specAsStored(plain), `${at}.padding, ${validation}: stored without it`)
      t.strictSame(
        written.warnings,
        validation === 'Warn' ? [`unknown field "${at}.padding"`] : [],
        `${at}.padding, ${validation}: ${validation === 'Warn' ? 'a warning names it' : 'pruned'}`,
      )
      t.ok(JSON.stringify(stored).length < 4096, `${at}.padding, ${validation}: the stored object is small`)
    }
  }
})

let plainSpec: Json | undefined
/** The plain definition's spec as the API server stores it (its defaults filled in), once. */
async function specAsStored(plain: Json): Promise<Json> {
  if (plainSpec === undefined) {
    const stored = await create(withValue(plain, 'metadata.name', 'plain-as-stored'), 'Strict', true)
    plainSpec = stored.stored?.spec as Json
  }
  return plainSpec
}

t.test('kubectl apply refuses a definition with an unknown field, naming it', async (t) => {
  const padded = withValue(definition('kubectl-padded'), 'spec.pod.containers[0].padding', 'x'.repeat(1000))
  const applied = await env.kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify(padded) })
  t.not(applied.code, 0, 'kubectl fails')
  t.match(applied.stderr, /strict decoding error: unknown field "spec\.pod\.containers\[0\]\.padding"/)
  t.equal(await env.rest.find(`${definitions}/kubectl-padded`), undefined, 'nothing stored')
})

/** The API server's words for a forbidden field: its path, the value when it is a scalar, and the rule's message. */
function forbiddenAt(path: string, node: Schema): RegExp {
  const message = (node['x-kubernetes-validations'] as { message: string }[])[0]?.message as string
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const value = { boolean: 'true: ', integer: '1: ', string: '"x": ' }[String(node.type)] ?? ''
  return new RegExp(
    `^ChallengeDefinition\\.challenge-hooks\\.dev "[a-z0-9-]+" is invalid: ${escape(`${path}: Invalid value: ${value}${message}`)}$`,
  )
}

/** `at` of FORBIDDEN_FIELDS ('pod.containers[]') as a path into one definition ('spec.pod.containers[0]'). */
const concrete = (at: string) => `spec.${at.replaceAll('[]', '[0]')}`

/** The node of the CRD at a path of FORBIDDEN_FIELDS (`[]` steps into items). */
function crdNode(path: string): Schema {
  let node = loadCrdSchema('ChallengeDefinition')
  for (const step of `spec.${path}`.split('.')) {
    const name = step.replace('[]', '')
    node = (node.properties as Record<string, Schema>)[name] as Schema
    if (step.endsWith('[]')) node = node.items as Schema
  }
  return node
}

const firstContainer = ((definition('any').spec as Json).pod as { containers: Json[] }).containers[0] as Json

const VALUES: Record<string, unknown> = { boolean: true, integer: 1, string: 'x', object: {}, array: [{}] }

t.test('every forbidden field is refused by the API server, naming it, whatever the field validation', async (t) => {
  let count = 0
  for (const [at, names] of Object.entries(FORBIDDEN_FIELDS)) {
    for (const name of names) {
      const node = crdNode(`${at}.${name}`)
      const path = `${concrete(at)}.${name}`
      // A field of a handler sits in a probe of that handler alone (a probe has one).
      const handler = /readinessProbe\.(httpGet|tcpSocket|grpc)$/.exec(at)?.[1]
      const probe = handler === undefined ? {} : { readinessProbe: { [handler]: { port: 8080 } } }
      // A field of a variable's source sits in a variable that reads an author's Secret.
      const env = at.startsWith('pod.containers[].env[]')
        ? { env: [{ name: 'SECRET', valueFrom: { secretKeyRef: { name: 'alice-web', key: 'password' } } }] }
        : {}
      const base = withValue(definition(`forbidden-${++count}`), 'spec.pod.containers[0]', {
        ...firstContainer,
        ...probe,
        ...env,
      })
      const asked = withValue(base, path, VALUES[node.type as string])
      const validations: Validation[] = ['Strict', 'Warn', 'Ignore']
      for (const validation of validations) {
        const result = await create(asked, validation, true)
        t.equal(result.refused?.status, 422, `${path}, ${validation}: refused`)
        t.match(result.refused?.message, forbiddenAt(path, node), `${path}, ${validation}: the API server names it`)
      }
    }
  }
  t.ok(count > 70, `${count} fields`)
  // The three of the contract's own example, as an author writes them.
  const greedy = withValue(
    withValue(definition('greedy'), 'spec.pod.hostNetwork', true),
    'spec.pod.containers[0].securityContext',
    { runAsUser: 1000, privileged: true, capabilities: { add: ['NET_ADMIN'] } },
  )
  const refused = await create(greedy, 'Ignore')
  t.equal(refused.refused?.status, 422, 'privileged, an added capability and hostNetwork together: refused')
  for (const path of [
    'spec.pod.hostNetwork',
    'spec.pod.containers[0].securityContext.privileged',
    'spec.pod.containers[0].securityContext.capabilities',
  ])
    t.match(refused.refused?.message, `${path}: Invalid value`, `${path} is named`)
})

t.test("the API server's own Pod and Container fields: each is the contract's, or refused", async (t) => {
  const openapi = await env.rest.get<{ components: { schemas: Record<string, Schema> } }>('/openapi/v3/api/v1')
  const types: Record<string, string> = {
    pod: 'PodSpec',
    'pod.containers[]': 'Container',
    'pod.containers[].env[]': 'EnvVar',
    'pod.containers[].env[].valueFrom': 'EnvVarSource',
    'pod.containers[].env[].valueFrom.secretKeyRef': 'SecretKeySelector',
    'pod.imagePullSecrets[]': 'LocalObjectReference',
    'pod.containers[].ports[]': 'ContainerPort',
    'pod.containers[].resources': 'ResourceRequirements',
    'pod.containers[].securityContext': 'SecurityContext',
    'pod.containers[].readinessProbe': 'Probe',
    'pod.containers[].readinessProbe.exec': 'ExecAction',
    'pod.containers[].readinessProbe.httpGet': 'HTTPGetAction',
    'pod.containers[].readinessProbe.httpGet.httpHeaders[]': 'HTTPHeader',
    'pod.containers[].readinessProbe.tcpSocket': 'TCPSocketAction',
    'pod.containers[].readinessProbe.grpc': 'GRPCAction',
  }
  const undeclared: string[] = []
  const unknownToKubernetes: string[] = []
  for (const [at, type] of Object.entries(types)) {
    const kubernetes = Object.keys(openapi.components.schemas[`io.k8s.api.core.v1.${type}`]?.properties ?? {})
    const declared = Object.keys(crdNode(at).properties ?? {})
    t.ok(kubernetes.length > 0, `${type}: the API server describes it`)
    undeclared.push(...kubernetes.filter((name) => !declared.includes(name)).map((name) => `spec.${at}.${name}`))
    unknownToKubernetes.push(
      ...declared.filter((name) => !kubernetes.includes(name)).map((name) => `spec.${at}.${name}`),
    )
  }
  t.strictSame(undeclared, [], 'every other field of these types is declared: allowed, or refused')
  t.strictSame(unknownToKubernetes, [], 'the CRD declares no field Kubernetes does not have')
})

t.test('the largest definition the CRD accepts is stored whole: the bound of docs/api.md', async (t) => {
  const largest = definition('largest', largestStoredDefinitionSpec())
  const written = await create(largest, 'Strict')
  t.equal(written.refused, undefined, 'accepted')
  const stored = await env.rest.get<Json>(`${definitions}/largest`)
  t.strictSame((stored.spec as Json).pod, (largest.spec as Json).pod, 'nothing pruned')
  const specBytes = Buffer.byteLength(JSON.stringify(stored.spec))
  const objectBytes = Buffer.byteLength(JSON.stringify(stored))
  t.comment(`the largest definition: spec ${specBytes} bytes, the object as stored ${objectBytes} bytes`)
  t.equal(Math.round(specBytes / 1000), 131, "its spec: docs/api.md's 131 KB")
  t.equal(Math.round(objectBytes / 1000), 153, "as stored: docs/api.md's 153 KB")

  const oneMore = structuredClone(largest)
  const [first] = ((oneMore.spec as Json).pod as { containers: { resources: { limits: Json } }[] }).containers
  ;(first as { resources: { limits: Json } }).resources.limits.cpu = '1'
  t.match(
    (await create(oneMore, 'Strict', true)).refused,
    {
      status: 422,
      message:
        /spec\.pod: Invalid value: at most 64 resource names in the requests and limits of all containers together$/,
    },
    'one resource name more: refused',
  )
  const twoHandlers = withValue(definition('two-handlers'), 'spec.pod.containers[0].readinessProbe.exec', {
    command: ['true'],
  })
  t.match(
    (await create(twoHandlers, 'Strict', true)).refused,
    {
      status: 422,
      message:
        /spec\.pod\.containers\[0\]\.readinessProbe: Invalid value: a probe needs exactly one handler of exec, httpGet, tcpSocket, grpc$/,
    },
    'a probe with two handlers: refused',
  )
  await kubectlOk(env.kubectl, ['delete', '-n', ns, 'chaldef', 'largest'])
})
