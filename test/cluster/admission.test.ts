// Admission for real: every CEL rule of the CRDs and the label ValidatingAdmissionPolicy, each with an object the
// API server accepts and one it refuses, asserting the API server's own message. No controller runs here.
import { largestDefinitionSpec, largestParameters } from '../helpers/largest.js'
import t from 'tap'
import { ApiError } from '../support/simulator/index.js'
import { API, connect, createNamespace, install, registerAuthors, type Json } from '../support/kube/harness.js'

const env = await connect(t)
await install(env)
const ns = await createNamespace(env, t, 'admission')
const challenges = `/apis/${API}/namespaces/${ns}/challenges`
const definitions = `/apis/${API}/namespaces/${ns}/challengedefinitions`
const POLICY =
  "ValidatingAdmissionPolicy 'challenge-hooks-challenge-labels' with binding 'challenge-hooks-challenge-labels' denied request"

function challenge(name: string, labels: Record<string, string> | undefined, spec: Json = {}): Json {
  return {
    apiVersion: API,
    kind: 'Challenge',
    metadata: { name, ...(labels === undefined ? {} : { labels }) },
    spec: { definitionRef: { name: 'web-login' }, owner: { kind: 'User', id: 'alice' }, ...spec },
  }
}
const LABELS = { 'challenge-hooks.dev/owner': 'alice', 'challenge-hooks.dev/definition': 'web-login' }

function definition(name: string, spec: Json): Json {
  return {
    apiVersion: API,
    kind: 'ChallengeDefinition',
    metadata: { name },
    spec: { pod: { containers: [{ name: 'app', image: 'registry.test/app' }] }, expose: { port: 8080 }, ...spec },
  }
}

/** The API server's refusal (status and message), or undefined when it accepted. */
async function attempt(write: () => Promise<unknown>): Promise<{ status: number; message: string } | undefined> {
  try {
    await write()
    return undefined
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, message: error.message }
    throw error
  }
}

const create = (path: string, body: Json) => () => env.rest.call('POST', path, { body })
const patch = (path: string, body: Json) => () =>
  env.rest.call('PATCH', path, { body, contentType: 'application/merge-patch+json' })

t.test('the label policy: a Challenge is created only with both labels equal to its spec', async (t) => {
  t.equal(await attempt(create(challenges, challenge('labelled', LABELS))), undefined, 'matching labels: created')
  const refusals: Array<[string, Record<string, string> | undefined, RegExp]> = [
    [
      'no labels at all',
      undefined,
      /the label challenge-hooks\.dev\/owner must be set and equal to spec\.owner\.id \("alice"\)/,
    ],
    [
      'another owner',
      { ...LABELS, 'challenge-hooks.dev/owner': 'mallory' },
      /the label challenge-hooks\.dev\/owner must be set and equal to spec\.owner\.id \("alice"\)/,
    ],
    [
      'no owner label',
      { 'challenge-hooks.dev/definition': 'web-login' },
      /the label challenge-hooks\.dev\/owner must be set/,
    ],
    [
      'another definition',
      { ...LABELS, 'challenge-hooks.dev/definition': 'pwn-echo' },
      /the label challenge-hooks\.dev\/definition must be set and equal to spec\.definitionRef\.name \("web-login"\)/,
    ],
    [
      'no definition label',
      { 'challenge-hooks.dev/owner': 'alice' },
      /the label challenge-hooks\.dev\/definition must be set/,
    ],
  ]
  for (const [what, labels, message] of refusals) {
    const refusal = await attempt(create(challenges, challenge(`refused-${what.replace(/ /g, '-')}`, labels)))
    t.equal(refusal?.status, 422, `${what}: refused (422)`)
    t.match(refusal?.message, POLICY, `${what}: by the policy`)
    t.match(refusal?.message, message, `${what}: the policy's message`)
  }
  const relabel = await attempt(
    patch(`${challenges}/labelled`, { metadata: { labels: { 'challenge-hooks.dev/owner': 'mallory' } } }),
  )
  t.match(
    refusal(relabel),
    new RegExp(`${escape(POLICY)}: the label challenge-hooks.dev/owner`),
    'an update that breaks the labels is refused too',
  )
  t.equal(
    await attempt(patch(`${challenges}/labelled`, { metadata: { labels: { team: 'red' } } })),
    undefined,
    'other labels may change',
  )
})

t.test('immutable fields and only-growing counters of a Challenge', async (t) => {
  await env.rest.call('POST', challenges, { body: challenge('counters', LABELS, { renewals: 1, restarts: 1 }) })
  const path = `${challenges}/counters`
  const cases: Array<[string, Json, RegExp | undefined]> = [
    ['renewals grows', { spec: { renewals: 2 } }, undefined],
    ['renewals shrinks', { spec: { renewals: 0 } }, /spec\.renewals: Invalid value: 0: spec\.renewals may only grow/],
    ['restarts grows', { spec: { restarts: 2 } }, undefined],
    ['restarts shrinks', { spec: { restarts: 1 } }, /spec\.restarts: Invalid value: 1: spec\.restarts may only grow/],
    [
      'definitionRef changes',
      {
        metadata: { labels: { 'challenge-hooks.dev/definition': 'pwn-echo' } },
        spec: { definitionRef: { name: 'pwn-echo' } },
      },
      /spec\.definitionRef: Invalid value: spec\.definitionRef is immutable/,
    ],
    [
      'owner.id changes',
      { metadata: { labels: { 'challenge-hooks.dev/owner': 'bob' } }, spec: { owner: { id: 'bob' } } },
      /spec\.owner: Invalid value: spec\.owner is immutable/,
    ],
    [
      'owner.kind changes',
      { spec: { owner: { kind: 'Team' } } },
      /spec\.owner: Invalid value: spec\.owner is immutable/,
    ],
    ['desiredState changes', { spec: { desiredState: 'Stopped', stopReason: 'Solved' } }, undefined],
  ]
  for (const [what, body, message] of cases) {
    const refusal = await attempt(patch(path, body))
    if (message === undefined) t.equal(refusal, undefined, `${what}: accepted`)
    else t.match(refusal, { status: 422, message }, `${what}: refused with the rule's message`)
  }
  const stored = await env.rest.get<{ spec: Json }>(path)
  t.match(
    stored.spec,
    {
      renewals: 2,
      restarts: 2,
      definitionRef: { name: 'web-login' },
      owner: { kind: 'User', id: 'alice' },
      desiredState: 'Stopped',
    },
    'only the accepted changes are stored',
  )
})

/** Parameters one character over their total (names and values). */
function overTotal(): Record<string, string> {
  const parameters = largestParameters()
  const [first] = Object.keys(parameters)
  parameters[first as string] += 'x'
  return parameters
}

type Container = { args: string[]; env: Array<{ value: string }> }
/** The first container of `spec`, changed by `change`: one character over a pod-wide total. */
function withFirstContainer(spec: Json, change: (container: Container) => void): Json {
  change((spec as unknown as { pod: { containers: Container[] } }).pod.containers[0] as Container)
  return spec
}

t.test('schema rules of a Challenge', async (t) => {
  const cases: Array<[string, Json, RegExp]> = [
    [
      'a parameter that is no env var name',
      { parameters: { 'not-a-name': 'x' } },
      /spec\.parameters: Invalid value: parameter names must be environment variable names/,
    ],
    [
      'a parameter named __proto__',
      { parameters: JSON.parse('{"__proto__": "x"}') },
      /spec\.parameters: Invalid value: parameter names __proto__, constructor and prototype are refused/,
    ],
    [
      'a parameter named constructor',
      { parameters: { constructor: 'x' } },
      /spec\.parameters: Invalid value: parameter names __proto__, constructor and prototype are refused/,
    ],
    [
      'a parameter named prototype',
      { parameters: { prototype: 'x' } },
      /spec\.parameters: Invalid value: parameter names __proto__, constructor and prototype are refused/,
    ],
    [
      'an owner id that is no label value',
      { owner: { kind: 'User', id: 'Alice!' } },
      /spec\.owner\.id: Invalid value: "Alice!": spec\.owner\.id in body should match/,
    ],
    [
      'an unknown owner kind',
      { owner: { kind: 'Robot', id: 'alice' } },
      /spec\.owner\.kind: Unsupported value: "Robot": supported values: "User", "Team"/,
    ],
    [
      'a lifetime below a minute',
      { lifetimeSeconds: 10 },
      /spec\.lifetimeSeconds: Invalid value: 10: spec\.lifetimeSeconds in body should be greater than or equal to 60/,
    ],
    [
      'a deadline that is no date-time',
      { deadline: 'tomorrow' },
      /spec\.deadline: Invalid value: "tomorrow": spec\.deadline in body must be of type date-time/,
    ],
    [
      'parameters over their total',
      { parameters: overTotal() },
      /spec\.parameters: Invalid value: the parameter names and values together must be at most 4096 characters/,
    ],
    [
      'a parameter name over 128 characters',
      { parameters: { [`P${'X'.repeat(128)}`]: 'x' } },
      /spec\.parameters: Invalid value: parameter names must be environment variable names .* of at most 128 characters/,
    ],
  ]
  for (const [what, spec, message] of cases) {
    const refusal = await attempt(
      create(challenges, challenge(`schema-${cases.findIndex((c) => c[0] === what)}`, LABELS, spec)),
    )
    t.match(refusal, { status: 422, message }, `${what}: refused`)
  }
  t.equal(
    await attempt(
      create(
        challenges,
        challenge('schema-ok', LABELS, {
          parameters: { LEVEL: '3' },
          lifetimeSeconds: 60,
          deadline: '2030-01-01T00:00:00Z',
        }),
      ),
    ),
    undefined,
    'a valid one is accepted',
  )
})

t.test('the rules of a ChallengeDefinition', async (t) => {
  const cases: Array<[string, Json, RegExp | undefined]> = [
    ['expose.container names a container', { expose: { port: 8080, container: 'app' } }, undefined],
    [
      'expose.container names none',
      { expose: { port: 8080, container: 'sidecar' } },
      /spec\.expose\.container: Invalid value: expose\.container must name one of pod\.containers/,
    ],
    ['Static with its Secret', { flag: { mode: 'Static', staticSecretRef: { name: 'flag', key: 'flag' } } }, undefined],
    [
      'Static without a Secret',
      { flag: { mode: 'Static' } },
      /spec\.flag: Invalid value: flag\.mode Static needs flag\.staticSecretRef/,
    ],
    [
      'no containers',
      { pod: { containers: [] } },
      /spec\.pod\.containers: Invalid value: 0: spec\.pod\.containers in body should have at least 1 items/,
    ],
    [
      'an unknown exposure',
      { expose: { port: 8080, type: 'Carrier-Pigeon' } },
      /spec\.expose\.type: Unsupported value: "Carrier-Pigeon"/,
    ],
    ['the largest valid definition', largestDefinitionSpec(), undefined],
    [
      'command and args over the pod total',
      withFirstContainer(largestDefinitionSpec(), (c) => (c.args[0] += 'x')),
      /spec\.pod: Invalid value: command and args of all containers together must be at most 16384 characters/,
    ],
    [
      'env values over the pod total',
      withFirstContainer(largestDefinitionSpec(), (c) => ((c.env[0] as { value: string }).value += 'x')),
      /spec\.pod: Invalid value: the env values of all containers together must be at most 16384 characters/,
    ],
    [
      'an env value over 4096 characters',
      {
        pod: {
          containers: [{ name: 'app', image: 'registry.test/app:1', env: [{ name: 'A', value: 'x'.repeat(4097) }] }],
        },
      },
      /spec\.pod\.containers\[0\]\.env\[0\]\.value: Too long: may not be (longer than|more than) 4096/,
    ],
  ]
  for (const [index, [what, spec, message]] of cases.entries()) {
    const refusal = await attempt(create(definitions, definition(`rules-${index}`, spec)))
    if (message === undefined) t.equal(refusal, undefined, `${what}: accepted`)
    else t.match(refusal, { status: 422, message }, `${what}: refused with the rule's message`)
  }
})

t.test(
  "the policy never blocks Metacontroller's writes: status, and the finalizer of a Challenge being deleted",
  async (t) => {
    await env.rest.call('POST', challenges, { body: challenge('finalized', LABELS) })
    const path = `${challenges}/finalized`
    t.equal(
      await attempt(
        patch(path, { metadata: { finalizers: ['metacontroller.io/compositecontroller-challenge-hooks'] } }),
      ),
      undefined,
      'finalizer added',
    )
    t.equal(
      await attempt(() =>
        env.rest.call('PATCH', `${path}/status`, {
          body: { status: { phase: 'Pending', reason: 'Starting' } },
          contentType: 'application/merge-patch+json',
        }),
      ),
      undefined,
      'status written',
    )
    await env.rest.call('DELETE', path)
    const deleting = await env.rest.get<{ metadata: { deletionTimestamp?: string } }>(path)
    t.ok(deleting.metadata.deletionTimestamp, 'being deleted')
    t.equal(await attempt(patch(path, { metadata: { finalizers: null } })), undefined, 'finalizer removed')
    t.equal(await env.rest.find(path), undefined, 'gone')
  },
)

function refusal(result: { message: string } | undefined): string {
  return result?.message ?? '(accepted)'
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

t.test(
  'authors own their definitions: only the author named at create, or an operator, may change or delete one',
  async (t) => {
    // Two authors of the authors' group (roles.yaml binds it in the challenges namespace; here, in this one).
    await env.rest.call('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
      body: {
        metadata: { name: 'authors' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'challenge-hooks-author' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'challenge-authors' }],
      },
    })
    await env.rest.call('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
      body: {
        metadata: { name: 'operators' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'challenge-hooks-operator' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'olivia' }],
      },
    })
    // The names alice creates here are hers (the policy challenge-hooks-definition-names, test/cluster/definition-names.test.ts).
    await registerAuthors(env, ns, [
      {
        user: 'alice@example.org',
        definitionNames: ['alices', 'unnamed', 'forged'],
        imagePrefixes: ['registry.test/'],
      },
      // bob writes alice's definition once an operator hands it to him.
      { user: 'bob@example.org', imagePrefixes: ['registry.test/'] },
    ])
    const alice = { user: 'alice@example.org', groups: ['challenge-authors'] }
    const bob = { user: 'bob@example.org', groups: ['challenge-authors'] }
    const olivia = { user: 'olivia' }
    const POLICY_DENIED =
      "ValidatingAdmissionPolicy 'challenge-hooks-definition-authors' with binding 'challenge-hooks-definition-authors' denied request"
    const authored = (name: string, author: string | undefined): Json => {
      const body = definition(name, {})
      if (author !== undefined) (body.metadata as Json).annotations = { 'challenge-hooks.dev/author': author }
      return body
    }
    const as = (who: { user: string; groups?: string[] }) => ({
      create: (body: Json) => () => env.rest.call('POST', definitions, { body, as: who }),
      patch: (name: string, body: Json) => () =>
        env.rest.call('PATCH', `${definitions}/${name}`, {
          body,
          contentType: 'application/merge-patch+json',
          as: who,
        }),
      remove: (name: string) => () => env.rest.call('DELETE', `${definitions}/${name}`, { as: who }),
    })
    const refusedBecause = async (what: string, write: () => Promise<unknown>, message: string) => {
      const result = await attempt(write)
      t.equal(result?.status, 403, `${what}: refused (403)`)
      // The API server's words: `challengedefinitions.challenge-hooks.dev "<name>" is forbidden: <policy>: <message>`.
      t.match(
        result?.message,
        /^challengedefinitions\.challenge-hooks\.dev "[a-z-]+" is forbidden: /,
        `${what}: forbidden`,
      )
      t.equal(result?.message.replace(/^[^:]*: /, ''), `${POLICY_DENIED}: ${message}`, `${what}: the policy's words`)
    }

    // Create: the author named must be the creator.
    t.equal(
      await attempt(as(alice).create(authored('alices', 'alice@example.org'))),
      undefined,
      'alice creates a definition naming herself',
    )
    await refusedBecause(
      'alice creates one naming nobody',
      as(alice).create(authored('unnamed', undefined)),
      'a new ChallengeDefinition names its author: set metadata.annotations["challenge-hooks.dev/author"] to your user name, "alice@example.org"',
    )
    await refusedBecause(
      'alice creates one naming bob',
      as(alice).create(authored('forged', 'bob@example.org')),
      'a new ChallengeDefinition names its author: set metadata.annotations["challenge-hooks.dev/author"] to your user name, "alice@example.org"',
    )

    // Update and delete: bob can do neither to alice's definition, whatever he changes.
    const past = { spec: { availableUntil: '2000-01-01T00:00:00Z' } }
    const exfiltrate = {
      spec: {
        network: { egress: 'Internet' },
        pod: { containers: [{ name: 'app', image: 'registry.test/exfiltrate' }] },
      },
    }
    const notBob =
      'only its author, "alice@example.org", or an operator may change this ChallengeDefinition; you are "bob@example.org"'
    await refusedBecause(
      "bob ends alice's challenge for everyone (availableUntil in the past)",
      as(bob).patch('alices', past),
      notBob,
    )
    await refusedBecause(
      "bob swaps alice's image and opens egress to the Internet",
      as(bob).patch('alices', exfiltrate),
      notBob,
    )
    await refusedBecause(
      'bob makes himself the author',
      as(bob).patch('alices', { metadata: { annotations: { 'challenge-hooks.dev/author': 'bob@example.org' } } }),
      notBob,
    )
    await refusedBecause(
      "bob deletes alice's definition",
      as(bob).remove('alices'),
      'only its author, "alice@example.org", or an operator may delete this ChallengeDefinition; you are "bob@example.org"',
    )
    const unchanged = await env.rest.get<Json>(`${definitions}/alices`)
    t.equal((unchanged.spec as Json).availableUntil, undefined, "alice's definition is as she left it")

    // The author herself may change her definition, but not hand it over.
    t.equal(
      await attempt(as(alice).patch('alices', { spec: { displayName: "Alice's web challenge" } })),
      undefined,
      'alice edits her own',
    )
    await refusedBecause(
      'alice renames its author',
      as(alice).patch('alices', { metadata: { annotations: { 'challenge-hooks.dev/author': 'bob@example.org' } } }),
      'the annotation challenge-hooks.dev/author is immutable (an operator may hand a definition to another author)',
    )

    // A definition an operator made without an author: no author may touch it.
    t.equal(
      await attempt(create(definitions, definition('operators', {}))),
      undefined,
      'the admin (an operator: cluster-admin) creates one naming no author',
    )
    await refusedBecause(
      'alice edits a definition that names no author',
      as(alice).patch('operators', past),
      'only its author (it names none) or an operator may change this ChallengeDefinition; you are "alice@example.org"',
    )

    // Operators may do anything: hand a definition over, edit, delete.
    t.equal(
      await attempt(
        as(olivia).patch('alices', { metadata: { annotations: { 'challenge-hooks.dev/author': 'bob@example.org' } } }),
      ),
      undefined,
      'olivia (challenge-hooks-operator) hands it to bob',
    )
    t.equal(
      await attempt(as(bob).patch('alices', { spec: { displayName: "Now bob's" } })),
      undefined,
      'bob edits it now',
    )
    await refusedBecause(
      'alice no longer may',
      as(alice).patch('alices', past),
      'only its author, "bob@example.org", or an operator may change this ChallengeDefinition; you are "alice@example.org"',
    )
    t.equal(await attempt(as(olivia).patch('operators', past)), undefined, 'olivia edits the one that names no author')
    t.equal(await attempt(as(olivia).remove('operators')), undefined, 'olivia deletes it')
    t.equal(await attempt(as(bob).remove('alices')), undefined, 'bob, its author now, deletes it')
    t.equal(await env.rest.find(`${definitions}/alices`), undefined, 'gone')
  },
)
