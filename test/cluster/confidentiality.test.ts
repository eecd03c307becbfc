// What one author can and cannot reach of another's work, on a real API server with impersonated authors (bob
// against alice): the images and pull Secrets his definitions may name, and the Secrets of hers he can neither read,
// replace, delete, take the name of, nor hand to his own challenge (manifests/author-policy.yaml, roles.yaml). Then
// the pods as the API server stores them: a definition's own pull Secrets and nothing else, the pull policy, and what
// a pull Secret on the namespace's default ServiceAccount would do.
import t, { type Test } from 'tap'
import { ApiError } from '../support/simulator/index.js'
import { registerAuthors } from '../support/kube/install.js'
import { eventually } from '../support/eventually.js'
import { kubectlOk } from '../support/kube/kubectl.js'
import { startSuite, type Json } from '../support/kube/harness.js'

const suite = await startSuite(t)
const s = await suite.scenario(t, 'confidentiality')
const ns = s.ns
const rest = suite.rest
const definitions = `/apis/challenge-hooks.dev/v1alpha1/namespaces/${ns}/challengedefinitions`
const secrets = `/api/v1/namespaces/${ns}/secrets`

// The operator's register: each author's images, pull Secrets and Secret prefix. carol's prefix starts with alice's,
// so a name both match (alice-b-…) belongs to neither.
await registerAuthors(suite, ns, [
  {
    user: 'alice@example.org',
    imagePrefixes: ['registry.test/alice/'],
    imagePullSecrets: ['alice-pull'],
    secretPrefix: 'alice-',
    definitionNames: ['alices-*'],
  },
  {
    user: 'bob@example.org',
    imagePrefixes: ['registry.test/bob/'],
    imagePullSecrets: ['bob-pull'],
    secretPrefix: 'bob-',
    definitionNames: ['bobs-*'],
  },
  {
    user: 'carol@example.org',
    imagePrefixes: ['registry.test/carol/'],
    secretPrefix: 'alice-b-',
    definitionNames: ['carols-*'],
  },
])
// The authors' group and an operator, bound in this namespace as roles.yaml binds them in `challenges`.
for (const [name, role, subject] of [
  [
    'authors',
    'challenge-hooks-author',
    { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'challenge-authors' },
  ],
  ['operators', 'challenge-hooks-operator', { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'olivia' }],
] as const) {
  await rest.call('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [subject],
    },
  })
}
// The operator's pull Secrets, one per author (no author annotation: no author may touch them).
for (const name of ['alice-pull', 'bob-pull']) {
  await rest.call('POST', secrets, {
    body: {
      metadata: { name },
      type: 'kubernetes.io/dockerconfigjson',
      data: {
        '.dockerconfigjson': Buffer.from('{"auths":{"registry.test":{"auth":"dXNlcjpwYXNz"}}}').toString('base64'),
      },
    },
  })
}

type Who = { user: string; groups?: string[] }
const alice: Who = { user: 'alice@example.org', groups: ['challenge-authors'] }
const bob: Who = { user: 'bob@example.org', groups: ['challenge-authors'] }
const dave: Who = { user: 'dave@example.org', groups: ['challenge-authors'] }
const olivia: Who = { user: 'olivia' }

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

function definition(name: string, author: string | undefined, pod: Json): Json {
  return {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeDefinition',
    metadata: { name, ...(author === undefined ? {} : { annotations: { 'challenge-hooks.dev/author': author } }) },
    spec: { pod, expose: { port: 8080 } },
  }
}
const containers = (...images: string[]) => images.map((image, index) => ({ name: `c${index}`, image }))
const reads = (secret: string) => [
  {
    name: 'c0',
    image: 'registry.test/bob/web:1',
    env: [{ name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: secret, key: 'password' } } }],
  },
]
const createDefinition =
  (who: Who, body: Json, dryRun = false) =>
  () =>
    rest.call('POST', definitions, { body, as: who, ...(dryRun ? { query: { dryRun: 'All' } } : {}) })

function authorSecret(name: string, author: string, extra: Json = {}): Json {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      labels: { 'challenge-hooks.dev/author-secret': 'true' },
      annotations: { 'challenge-hooks.dev/author': author },
    },
    type: 'Opaque',
    stringData: { password: `${author}'s value` },
    ...extra,
  }
}
const createSecret =
  (who: Who, body: Json, dryRun = false) =>
  () =>
    rest.call('POST', secrets, { body, as: who, ...(dryRun ? { query: { dryRun: 'All' } } : {}) })
const replaceSecret = (who: Who, body: Json) => () =>
  rest.call('PUT', `${secrets}/${(body.metadata as { name: string }).name}`, { body, as: who })
const deleteSecret = (who: Who, name: string) => () => rest.call('DELETE', `${secrets}/${name}`, { as: who })

const denied = (policy: string) => `ValidatingAdmissionPolicy '${policy}' with binding '${policy}' denied request: `
const SOURCES = denied('challenge-hooks-definition-sources')
const OWN_SECRETS = denied('challenge-hooks-author-secrets')
const SECRET_NAMES = denied('challenge-hooks-author-secret-names')

/** A refusal's message without the API server's `<resource> "<name>" is forbidden: ` in front. */
async function refusedWith(t: Test, what: string, write: () => Promise<unknown>, message: string): Promise<void> {
  const refusal = await attempt(write)
  t.equal(refusal?.status, 403, `${what}: refused (403)`)
  t.equal(refusal?.message.replace(/^[^:]* is forbidden: /, ''), message, `${what}: ${message}`)
}

t.test('the policies type-check against the register and the objects they read, without a warning', async (t) => {
  for (const name of [
    'challenge-hooks-definition-sources',
    'challenge-hooks-author-secrets',
    'challenge-hooks-author-secret-names',
  ]) {
    const policy = await eventually(`${name} to be type-checked`, async () => {
      const vap = await rest.get<{
        metadata: { generation: number }
        status?: { observedGeneration?: number; typeChecking?: Json }
      }>(`/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${name}`)
      return vap.status?.observedGeneration === vap.metadata.generation ? vap : undefined
    })
    t.strictSame(policy.status?.typeChecking, {}, `${name}: no expression warning`)
  }
  // In force once a refusal comes back (a dry run: nothing is stored while waiting).
  await eventually(
    'the policies to be in force',
    async () =>
      (await attempt(
        createDefinition(
          bob,
          definition('bobs-warm-up', 'bob@example.org', { containers: containers('registry.test/alice/web:1') }),
          true,
        ),
      )) !== undefined &&
      (await attempt(createSecret(bob, authorSecret('alice-warm-up', 'bob@example.org'), true))) !== undefined,
  )
})

t.test('images: an author names only images under his own prefixes', async (t) => {
  t.equal(
    await attempt(
      createDefinition(
        alice,
        definition('alices-web', 'alice@example.org', { containers: containers('registry.test/alice/web:1') }),
      ),
    ),
    undefined,
    'alice names her own image',
  )
  await refusedWith(
    t,
    "bob runs alice's private image",
    createDefinition(
      bob,
      definition('bobs-copy', 'bob@example.org', {
        containers: containers('registry.test/bob/web:1', 'registry.test/alice/web:1'),
      }),
    ),
    `${SOURCES}container c1 names the image "registry.test/alice/web:1", which starts with none of the image prefixes of "bob@example.org": registry.test/bob/ (ChallengeAuthors "authors", written by an operator)`,
  )
  // A prefix is a whole path component: registry.test/bob/ never lets registry.test/bobby/ through.
  await refusedWith(
    t,
    'bob names a repository that merely starts like his',
    createDefinition(
      bob,
      definition('bobs-lookalike', 'bob@example.org', { containers: containers('registry.test/bobby/web:1') }),
    ),
    `${SOURCES}container c0 names the image "registry.test/bobby/web:1", which starts with none of the image prefixes of "bob@example.org": registry.test/bob/ (ChallengeAuthors "authors", written by an operator)`,
  )
  t.equal(
    await attempt(
      createDefinition(
        bob,
        definition('bobs-web', 'bob@example.org', { containers: containers('registry.test/bob/web:1') }),
      ),
    ),
    undefined,
    'bob names his own image',
  )
  await refusedWith(
    t,
    "bob swaps his definition's image for alice's",
    () =>
      rest.call('PATCH', `${definitions}/bobs-web`, {
        body: { spec: { pod: { containers: containers('registry.test/alice/web:1') } } },
        contentType: 'application/merge-patch+json',
        as: bob,
      }),
    `${SOURCES}container c0 names the image "registry.test/alice/web:1", which starts with none of the image prefixes of "bob@example.org": registry.test/bob/ (ChallengeAuthors "authors", written by an operator)`,
  )
  // Refused by the policy on definition names too: either message may come first.
  const unlisted = await attempt(
    createDefinition(
      dave,
      definition('daves', 'dave@example.org', { containers: containers('registry.test/dave/web:1') }),
    ),
  )
  t.equal(unlisted?.status, 403, 'an author the register does not list: refused')
  t.match(
    unlisted?.message,
    /ChallengeAuthors "authors".*dave@example\.org|dave@example\.org.*ChallengeAuthors "?authors"?/,
  )
  t.equal(
    await attempt(
      createDefinition(
        olivia,
        definition('olivias', 'bob@example.org', { containers: containers('docker.io/library/nginx:1') }),
      ),
    ),
    undefined,
    'an operator names any image, for any author',
  )
})

t.test(
  "pull Secrets: an author names only his own; the operator's pull Secrets are out of every author's reach",
  async (t) => {
    t.equal(
      await attempt(
        createDefinition(
          alice,
          definition('alices-private', 'alice@example.org', {
            containers: containers('registry.test/alice/web:1'),
            imagePullSecrets: [{ name: 'alice-pull' }],
          }),
        ),
      ),
      undefined,
      'alice names her pull Secret',
    )
    await refusedWith(
      t,
      "bob pulls with alice's credentials",
      createDefinition(
        bob,
        definition('bobs-pull', 'bob@example.org', {
          containers: containers('registry.test/bob/web:1'),
          imagePullSecrets: [{ name: 'bob-pull' }, { name: 'alice-pull' }],
        }),
      ),
      `${SOURCES}spec.pod.imagePullSecrets names the Secret "alice-pull", which is not a pull Secret of "bob@example.org": bob-pull (ChallengeAuthors "authors", written by an operator)`,
    )
    await refusedWith(
      t,
      "bob deletes alice's pull Secret",
      deleteSecret(bob, 'alice-pull'),
      `${OWN_SECRETS}an author deletes only Secrets of their own, annotated challenge-hooks.dev/author with their user name; this one is not yours ("bob@example.org")`,
    )
    await refusedWith(
      t,
      "bob reads alice's pull Secret",
      () => rest.get(`${secrets}/alice-pull`, { as: bob }),
      `User "bob@example.org" cannot get resource "secrets" in API group "" in the namespace "${ns}"`,
    )
  },
)

t.test("author Secrets: alice's is hers alone, written, never read, and only her definitions read it", async (t) => {
  t.equal(
    await attempt(createSecret(alice, authorSecret('alice-web', 'alice@example.org'))),
    undefined,
    'alice creates hers',
  )
  t.equal(
    await attempt(
      replaceSecret(alice, authorSecret('alice-web', 'alice@example.org', { stringData: { password: 'new' } })),
    ),
    undefined,
    'alice replaces hers',
  )
  const stored = await rest.get<{ data: Record<string, string> }>(`${secrets}/alice-web`)
  t.strictSame(
    stored.data,
    { password: Buffer.from('new').toString('base64') },
    'as alice wrote it (read by the admin)',
  )

  const cannot = (verb: string, resource = 'secrets') =>
    `User "bob@example.org" cannot ${verb} resource "${resource}" in API group "" in the namespace "${ns}"`
  await refusedWith(t, "bob reads alice's Secret", () => rest.get(`${secrets}/alice-web`, { as: bob }), cannot('get'))
  await refusedWith(t, 'bob lists the Secrets', () => rest.get(secrets, { as: bob }), cannot('list'))
  await refusedWith(
    t,
    "bob patches alice's Secret (a JSON patch's test would tell him whether a guess is right)",
    () =>
      rest.call('PATCH', `${secrets}/alice-web`, {
        body: [{ op: 'test', path: '/data/password', value: Buffer.from('new').toString('base64') }],
        contentType: 'application/json-patch+json',
        as: bob,
      }),
    cannot('patch'),
  )
  await refusedWith(
    t,
    "bob overwrites alice's Secret",
    replaceSecret(bob, authorSecret('alice-web', 'bob@example.org', { stringData: { password: 'bobs' } })),
    `${OWN_SECRETS}an author replaces only Secrets of their own, annotated challenge-hooks.dev/author with their user name; this one is not yours ("bob@example.org")`,
  )
  await refusedWith(
    t,
    "bob overwrites it keeping alice's annotation",
    replaceSecret(bob, authorSecret('alice-web', 'alice@example.org', { stringData: { password: 'bobs' } })),
    `${OWN_SECRETS}an author replaces only Secrets of their own, annotated challenge-hooks.dev/author with their user name; this one is not yours ("bob@example.org")`,
  )
  await refusedWith(
    t,
    "bob deletes alice's Secret",
    deleteSecret(bob, 'alice-web'),
    `${OWN_SECRETS}an author deletes only Secrets of their own, annotated challenge-hooks.dev/author with their user name; this one is not yours ("bob@example.org")`,
  )
  t.strictSame(
    (await rest.get<{ data: Record<string, string> }>(`${secrets}/alice-web`)).data,
    stored.data,
    "alice's value is untouched",
  )

  // Names: bob cannot take one of alice's before she does (and plant the value her challenge would read).
  await refusedWith(
    t,
    'bob creates a Secret under alice’s prefix',
    createSecret(bob, authorSecret('alice-admin', 'bob@example.org')),
    `${SECRET_NAMES}the Secret "alice-admin" is not named with your secretPrefix "bob-" alone`,
  )
  await refusedWith(
    t,
    "alice creates one that carol's prefix matches too",
    createSecret(alice, authorSecret('alice-b-key', 'alice@example.org')),
    `${SECRET_NAMES}the Secret "alice-b-key" is not named with your secretPrefix "alice-" alone`,
  )
  await refusedWith(
    t,
    'an author the register gives no prefix',
    createSecret(dave, authorSecret('dave-key', 'dave@example.org')),
    `${SECRET_NAMES}the Secret "dave-key" is not named with your secretPrefix (the register of authors, ChallengeAuthors "authors", gives "dave@example.org" none)`,
  )
  // What every author Secret must be: policy 2, with or without the register.
  const rules: Array<[string, Json, string]> = [
    [
      'without the author label',
      {
        ...authorSecret('bob-plain', 'bob@example.org'),
        metadata: { name: 'bob-plain', annotations: { 'challenge-hooks.dev/author': 'bob@example.org' } },
      },
      'an author\'s Secret carries the label challenge-hooks.dev/author-secret="true"',
    ],
    [
      'naming alice as its author',
      authorSecret('bob-forged', 'alice@example.org'),
      'an author\'s Secret carries the annotation challenge-hooks.dev/author set to your user name, "bob@example.org"',
    ],
    [
      'named like an instance flag Secret',
      authorSecret('bob-web-u-alice-flag', 'bob@example.org'),
      "a Secret name ending in -flag is reserved for the instances' own flag Secrets",
    ],
    [
      'a service-account token (the token controller would fill it in)',
      {
        ...authorSecret('bob-token', 'bob@example.org'),
        type: 'kubernetes.io/service-account-token',
        metadata: {
          name: 'bob-token',
          labels: { 'challenge-hooks.dev/author-secret': 'true' },
          annotations: {
            'challenge-hooks.dev/author': 'bob@example.org',
            'kubernetes.io/service-account.name': 'default',
          },
        },
        stringData: undefined,
      },
      "an author's Secret is of type Opaque, not kubernetes.io/service-account-token",
    ],
    [
      "labelled as a definition's Static flag source",
      {
        ...authorSecret('bob-static', 'bob@example.org'),
        metadata: {
          name: 'bob-static',
          labels: { 'challenge-hooks.dev/author-secret': 'true', 'challenge-hooks.dev/definition': 'alices-web' },
          annotations: { 'challenge-hooks.dev/author': 'bob@example.org' },
        },
      },
      "an author's Secret carries no label of challenge-hooks.dev/ but challenge-hooks.dev/author-secret (those select the platform's own objects)",
    ],
    [
      'over 4096 bytes in a key',
      authorSecret('bob-big', 'bob@example.org', { stringData: { blob: 'x'.repeat(4097) } }),
      "an author's Secret holds at most 16 keys of at most 4096 bytes each",
    ],
  ]
  for (const [what, body, message] of rules)
    await refusedWith(t, `bob's Secret ${what}`, createSecret(bob, body), `${OWN_SECRETS}${message}`)

  // An instance's flag Secret (made by the admin here, as Metacontroller makes one: no author annotation).
  await rest.call('POST', secrets, {
    body: { metadata: { name: 'alices-web-u-player-flag' }, stringData: { flag: 'flag{x}' } },
  })
  await refusedWith(
    t,
    "bob replaces a player's flag",
    replaceSecret(bob, {
      ...authorSecret('alices-web-u-player-flag', 'bob@example.org'),
      stringData: { flag: 'flag{bob}' },
    }),
    `${OWN_SECRETS}an author replaces only Secrets of their own, annotated challenge-hooks.dev/author with their user name; this one is not yours ("bob@example.org")`,
  )
  await refusedWith(
    t,
    "bob deletes a player's flag",
    deleteSecret(bob, 'alices-web-u-player-flag'),
    `${OWN_SECRETS}an author deletes only Secrets of their own, annotated challenge-hooks.dev/author with their user name; this one is not yours ("bob@example.org")`,
  )

  // Definitions: alice's reads hers; bob's reads only his.
  t.equal(
    await attempt(
      createDefinition(
        alice,
        definition('alices-bot', 'alice@example.org', {
          containers: [{ ...reads('alice-web')[0], image: 'registry.test/alice/bot:1' }],
        }),
      ),
    ),
    undefined,
    "alice's definition reads her Secret",
  )
  for (const [what, secret] of [
    ["alice's Secret", 'alice-web'],
    ["a player's flag Secret under his own prefix", 'bob-web-u-alice-flag'],
    ['a name no author owns', 'database'],
  ] as const) {
    await refusedWith(
      t,
      `bob's definition reads ${what}`,
      createDefinition(bob, definition(`bobs-reads-${secret}`, 'bob@example.org', { containers: reads(secret) })),
      `${SOURCES}container c0, variable DB_PASSWORD, reads the Secret "${secret}": a definition reads only Secrets of its author, named with their secretPrefix "bob-", never with another author's prefix, and never a name ending in -flag`,
    )
  }
  t.equal(await attempt(createSecret(bob, authorSecret('bob-db', 'bob@example.org'))), undefined, 'bob creates his own')
  t.equal(
    await attempt(createDefinition(bob, definition('bobs-db', 'bob@example.org', { containers: reads('bob-db') }))),
    undefined,
    "bob's definition reads his own",
  )
  t.equal(await attempt(deleteSecret(bob, 'bob-db')), undefined, 'bob deletes his own')
  t.equal(await attempt(deleteSecret(alice, 'alice-web')), undefined, 'alice deletes hers')
})

t.test("the authors' guide's commands: kubectl create, replace and delete of one's own Secret", async (t) => {
  const asAlice = ['-n', ns, '--as=alice@example.org', '--as-group=challenge-authors']
  const yaml = (value: string) =>
    JSON.stringify(authorSecret('alice-guide', 'alice@example.org', { stringData: { key: value } }))
  t.match(
    (await kubectlOk(suite.kubectl, ['create', '-f', '-', ...asAlice], { input: yaml('one') })).stdout,
    'secret/alice-guide created',
  )
  t.match(
    (await kubectlOk(suite.kubectl, ['replace', '-f', '-', ...asAlice], { input: yaml('two') })).stdout,
    'secret/alice-guide replaced',
  )
  const stored = await rest.get<{ data: Record<string, string> }>(`${secrets}/alice-guide`)
  t.strictSame(stored.data, { key: Buffer.from('two').toString('base64') }, 'replaced without reading it first')
  t.match(
    (await kubectlOk(suite.kubectl, ['delete', 'secret', 'alice-guide', ...asAlice])).stdout,
    'secret "alice-guide" deleted',
  )
})

t.test("why authors may not patch: a JSON patch's test answers before admission", async (t) => {
  // eve, an author granted patch on Secrets as well, probes alice's value with guesses.
  await rest.call('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
    body: {
      metadata: { name: 'patch-secrets' },
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['patch'] }],
    },
  })
  await rest.call('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    body: {
      metadata: { name: 'patch-secrets' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'patch-secrets' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'eve@example.org' }],
    },
  })
  await rest.call('POST', secrets, {
    body: authorSecret('alice-oracle', 'alice@example.org', { stringData: { pin: '4711' } }),
  })
  const guess = (pin: string) => () =>
    rest.call('PATCH', `${secrets}/alice-oracle`, {
      body: [
        { op: 'test', path: '/data/pin', value: Buffer.from(pin).toString('base64') },
        { op: 'replace', path: '/data/pin', value: Buffer.from(pin).toString('base64') },
      ],
      contentType: 'application/json-patch+json',
      as: { user: 'eve@example.org', groups: ['challenge-authors'] },
    })
  const wrong = await eventually('the binding to be in force', async () => {
    const result = await attempt(guess('0000'))
    return result?.status === 403 && /cannot patch/.test(result.message) ? undefined : result
  })
  const right = await attempt(guess('4711'))
  t.not(
    wrong?.status,
    right?.status,
    `a wrong guess (${String(wrong?.status)}) and a right one (${String(right?.status)}) answer apart`,
  )
  t.equal(right?.status, 403, 'the right guess reaches admission, which refuses it')
  t.strictSame(
    (await rest.get<{ data: Record<string, string> }>(`${secrets}/alice-oracle`)).data,
    { pin: Buffer.from('4711').toString('base64') },
    'nothing written',
  )
})

t.test('the RBAC of authors: Secrets written, never read, listed, watched or patched', async (t) => {
  const canI = async (verb: string) =>
    (
      await suite.kubectl([
        'auth',
        'can-i',
        verb,
        'secrets',
        '-n',
        ns,
        '--as=bob@example.org',
        '--as-group=challenge-authors',
      ])
    ).stdout.trim()
  for (const verb of ['create', 'update', 'delete']) t.equal(await canI(verb), 'yes', `${verb} secrets`)
  for (const verb of ['get', 'list', 'watch', 'patch', 'deletecollection'])
    t.equal(await canI(verb), 'no', `no ${verb} secrets`)
})

t.test(
  'the pods as stored: the definition’s own pull Secrets, pulled at each start; nothing from the ServiceAccount',
  async (t) => {
    await s.create(s.challenge('alices-private', 'player-one'))
    await s.create(s.challenge('alices-web', 'player-one'))
    await s.until('alices-private-u-player-one', (st) => st.phase === 'Running', 'Running')
    await s.until('alices-web-u-player-one', (st) => st.phase === 'Running', 'Running')
    const podOf = async (name: string) =>
      (
        await rest.get<{ spec: { imagePullSecrets?: Json[]; containers: Json[] } }>(
          `/api/v1/namespaces/${ns}/pods/${name}`,
        )
      ).spec
    const privatePod = await podOf('alices-private-u-player-one')
    t.strictSame(privatePod.imagePullSecrets, [{ name: 'alice-pull' }], "alice's pull Secret, and only it")
    t.strictSame(
      privatePod.containers.map((c) => c.imagePullPolicy),
      ['Always'],
      'pulled at every start',
    )
    const publicPod = await podOf('alices-web-u-player-one')
    t.equal(publicPod.imagePullSecrets, undefined, 'no pull Secret: the default ServiceAccount has none')
    t.strictSame(
      publicPod.containers.map((c) => c.imagePullPolicy),
      ['IfNotPresent'],
      "the API server's default for a tag",
    )

    // An operator who gives the namespace's default ServiceAccount a pull Secret hands it to every pod that names none.
    await kubectlOk(suite.kubectl, [
      'patch',
      'serviceaccount',
      'default',
      '-n',
      ns,
      '-p',
      '{"imagePullSecrets":[{"name":"bob-pull"}]}',
    ])
    await s.create(s.challenge('alices-web', 'player-two'))
    await s.create(s.challenge('alices-private', 'player-two'))
    await s.until('alices-web-u-player-two', (st) => st.phase === 'Running', 'Running')
    await s.until('alices-private-u-player-two', (st) => st.phase === 'Running', 'Running')
    t.strictSame(
      (await podOf('alices-web-u-player-two')).imagePullSecrets,
      [{ name: 'bob-pull' }],
      "the ServiceAccount's reaches a pod that names none",
    )
    t.strictSame(
      (await podOf('alices-private-u-player-two')).imagePullSecrets,
      [{ name: 'alice-pull' }],
      'never a pod that names its own',
    )
  },
)

t.test(
  'without a register, the definitions policy refuses every write, an operator’s too; the namespace still goes',
  async (t) => {
    await kubectlOk(suite.kubectl, ['delete', 'challengeauthors', 'authors', '-n', ns])
    const refusal = await eventually('the register to be gone for the policy', async () => {
      const result = await attempt(
        createDefinition(
          olivia,
          definition('after', undefined, { containers: containers('registry.test/alice/web:1') }),
          true,
        ),
      )
      return result
    })
    // Whichever policy that reads the register answers first: each fails the same way.
    t.match(refusal, {
      status: 422,
      message:
        /denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction$/,
    })
  },
)
