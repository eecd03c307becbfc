// A definition's name is its author's, beyond the object's life, on the real API server with impersonated authors
// (the policy challenge-hooks-definition-names and the register ChallengeAuthors `authors`); and an instance of a
// definition made again by someone else never starts on it until an operator says so (status.definitionAuthor,
// Error / DefinitionAuthorChanged, the annotation only operators may set: challenge-hooks-challenge-author).
import t from 'tap'
import { ApiError } from '../support/simulator/index.js'
import { eventually } from '../support/eventually.js'
import { CHALLENGES, registerAuthors, startSuite, type Json, type Scenario } from '../support/kube/harness.js'

const suite = await startSuite(t)

const ALICE = { user: 'alice@example.org', groups: ['challenge-authors'] }
const BOB = { user: 'bob@example.org', groups: ['challenge-authors'] }
const OLIVIA = { user: 'olivia@example.org' }
const PLATFORM = { user: 'system:serviceaccount:challenges:ctf-platform' }
type Who = typeof ALICE | typeof OLIVIA

const NAMES_POLICY =
  "ValidatingAdmissionPolicy 'challenge-hooks-definition-names' with binding 'challenge-hooks-definition-names' denied request"
const AUTHOR_POLICY =
  "ValidatingAdmissionPolicy 'challenge-hooks-challenge-author' with binding 'challenge-hooks-challenge-author' denied request"
const ACCEPT = 'challenge-hooks.dev/accept-definition-author'
const BOBS_IMAGE = 'registry.test/bob-web:6.6'
/** The image prefixes of the authors here: the test images' and the example's (s.definition names it). */
const IMAGES = ['registry.test/', 'docker.io/']

/** The roles of manifests/roles.yaml bound in the scenario's namespace, as in `challenges`. */
async function bindRoles(s: Scenario): Promise<void> {
  const bind = (name: string, role: string, subject: Json) =>
    suite.rest.call('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${s.ns}/rolebindings`, {
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [subject],
      },
    })
  await bind('authors', 'challenge-hooks-author', {
    apiGroup: 'rbac.authorization.k8s.io',
    kind: 'Group',
    name: 'challenge-authors',
  })
  await bind('operators', 'challenge-hooks-operator', {
    apiGroup: 'rbac.authorization.k8s.io',
    kind: 'User',
    name: OLIVIA.user,
  })
  await bind('platform', 'challenge-hooks-platform', {
    kind: 'ServiceAccount',
    name: 'ctf-platform',
    namespace: 'challenges',
  })
}

/** The API server's refusal (status and message after the object's name), or undefined when it accepted. */
async function attempt(write: () => Promise<unknown>): Promise<{ status: number; message: string } | undefined> {
  try {
    await write()
    return undefined
  } catch (error) {
    if (error instanceof ApiError)
      return { status: error.status, message: error.message.replace(/^[a-z.-]+ "[a-z0-9-]*" is forbidden: /, '') }
    throw error
  }
}

/**
 * The policies read the register through the API server's own cache of it, a moment behind a write (longer on a busy
 * machine): right after the register changes, a write is tried again until it meets `expected` (30 s at most), and
 * the last answer is returned for the test to compare. Only for the first write after a change of the register.
 */
async function onceSeen(
  write: () => Promise<unknown>,
  expected: { status: number; message: string } | undefined,
): Promise<{ status: number; message: string } | undefined> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const result = await attempt(write)
    if (JSON.stringify(result) === JSON.stringify(expected) || Date.now() > deadline) return result
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

/** A definition named `name` by `author` (no annotation when undefined); bob's runs his own image. */
function definitionBy(s: Scenario, name: string, author: string | undefined): Json {
  const spec =
    author === BOB.user
      ? {
          pod: {
            containers: [{ name: 'app', image: BOBS_IMAGE, ports: [{ name: 'http', containerPort: 8080 }] }],
          },
        }
      : {}
  const object = s.definition('web-login', spec, name) as unknown as Json & { metadata: Json }
  if (author !== undefined) object.metadata.annotations = { 'challenge-hooks.dev/author': author }
  return object
}

const definitions = (s: Scenario) => `${CHALLENGES}/namespaces/${s.ns}/challengedefinitions`
const create = (s: Scenario, who: Who | undefined, body: Json) => () =>
  suite.rest.call('POST', definitions(s), { body, ...(who === undefined ? {} : { as: who }) })
const remove = (s: Scenario, who: Who, name: string) => () =>
  suite.rest.call('DELETE', `${definitions(s)}/${name}`, { as: who })

const notReserved = (name: string, who: Who, ns: string) =>
  `${NAMES_POLICY}: the name ${name} is not reserved for you (${who.user}) in ${ns}: ask an operator to add it to ChallengeAuthors authors`

t.test("definition names are their authors', beyond the definitions' lives", async (t) => {
  const s = await suite.scenario(t, 'names')
  await bindRoles(s)
  await registerAuthors(suite, s.ns, [
    { user: ALICE.user, definitionNames: ['web-login', 'alice-*', 'shared'], imagePrefixes: IMAGES },
    { user: BOB.user, definitionNames: ['bob-*', 'shared'], imagePrefixes: IMAGES },
  ])
  const refused = async (what: string, write: () => Promise<unknown>, message: string) =>
    t.strictSame(await attempt(write), { status: 403, message }, what)

  t.equal(
    await onceSeen(create(s, ALICE, definitionBy(s, 'web-login', ALICE.user)), undefined),
    undefined,
    'alice: web-login',
  )
  t.equal(
    await attempt(create(s, ALICE, definitionBy(s, 'alice-crypto', ALICE.user))),
    undefined,
    'alice: alice-crypto, by her prefix alice-*',
  )
  await refused(
    'alice: alicecrypto, which her prefix alice-* does not cover',
    create(s, ALICE, definitionBy(s, 'alicecrypto', ALICE.user)),
    notReserved('alicecrypto', ALICE, s.ns),
  )
  await refused(
    'bob: pwn-echo, a name from the announced list nobody holds',
    create(s, BOB, definitionBy(s, 'pwn-echo', BOB.user)),
    notReserved('pwn-echo', BOB, s.ns),
  )
  await refused(
    'bob: shared, which two entries match',
    create(s, BOB, definitionBy(s, 'shared', BOB.user)),
    `${NAMES_POLICY}: the name shared is reserved for more than one author (alice@example.org, bob@example.org) in ${s.ns}: ask an operator to leave it to one in ChallengeAuthors authors`,
  )

  // Alice retires web-login; the name stays hers.
  t.equal(await attempt(remove(s, ALICE, 'web-login')), undefined, 'alice deletes web-login')
  await refused(
    "bob: alice's web-login, deleted",
    create(s, BOB, definitionBy(s, 'web-login', BOB.user)),
    notReserved('web-login', BOB, s.ns),
  )
  t.equal(
    await attempt(create(s, ALICE, definitionBy(s, 'web-login', ALICE.user))),
    undefined,
    'alice makes it again (kubectl delete -f && kubectl apply -f)',
  )
  t.equal(
    await attempt(create(s, OLIVIA, definitionBy(s, 'unlisted', undefined))),
    undefined,
    'olivia (an operator) creates a name nobody holds, naming no author',
  )

  // The register: alice reads it, cannot write it.
  const register = `${CHALLENGES}/namespaces/${s.ns}/challengeauthors/authors`
  t.equal(await attempt(() => suite.rest.call('GET', register, { as: ALICE })), undefined, 'alice reads the register')
  const grab = { spec: { authors: [{ user: BOB.user, definitionNames: ['web-login'] }] } }
  t.match(
    await attempt(() =>
      suite.rest.call('PATCH', register, { body: grab, contentType: 'application/merge-patch+json', as: BOB }),
    ),
    { status: 403, message: /cannot patch resource "challengeauthors"/ },
    'bob cannot write himself into it',
  )
})

t.test('without a register nobody creates a definition in the namespace, until an operator writes one', async (t) => {
  const s = await suite.scenario(t, 'no-register')
  await bindRoles(s)
  await suite.rest.call('DELETE', `${CHALLENGES}/namespaces/${s.ns}/challengeauthors/authors`)
  // Both policies that read the register refuse without it, and the API server does not say in which order it
  // asks them: the message names either, in the same words.
  const missingFor = (policy: string) =>
    `ValidatingAdmissionPolicy '${policy}' with binding '${policy}' denied request: failed to configure binding: no params found for policy binding with \`Deny\` parameterNotFoundAction`
  const [namesMissing, sourcesMissing] = [
    missingFor('challenge-hooks-definition-names'),
    missingFor('challenge-hooks-definition-sources'),
  ]
  const asked = (answer: { status: number; message: string } | undefined) =>
    answer?.message === sourcesMissing ? { ...answer, message: namesMissing } : answer
  const missing = namesMissing
  // Until the API server's cache of parameters has seen the deletion, the register may still be found.
  const refusal = await eventually('the register to be gone for the policy', async () => {
    const result = asked(await attempt(create(s, ALICE, definitionBy(s, 'web-login', ALICE.user))))
    if (result === undefined) await suite.rest.call('DELETE', `${definitions(s)}/web-login`)
    return result?.message === missing ? result : undefined
  })
  // A binding that cannot find its parameter is a configuration error to the API server: 422, reason Invalid.
  t.strictSame(refusal, { status: 422, message: missing }, 'an author: refused')
  t.strictSame(
    asked(await attempt(create(s, OLIVIA, definitionBy(s, 'web-login', ALICE.user)))),
    { status: 422, message: missing },
    'an operator: refused too (the parameter is looked up before any expression runs)',
  )
  t.strictSame(
    asked(await attempt(create(s, undefined, definitionBy(s, 'web-login', undefined)))),
    { status: 422, message: missing },
    'cluster-admin too',
  )
  // Alice is in the register with her images and no name: only the names policy has a reason to refuse her below
  // (where two policies refuse one write, the API server names either).
  await registerAuthors(suite, s.ns, [{ user: ALICE.user, definitionNames: [], imagePrefixes: IMAGES }])
  t.equal(
    await onceSeen(create(s, OLIVIA, definitionBy(s, 'web-login', ALICE.user)), undefined),
    undefined,
    'with a register that reserves no name: the operator creates one, naming alice',
  )
  t.strictSame(
    await attempt(create(s, ALICE, definitionBy(s, 'pwn-echo', ALICE.user))),
    { status: 403, message: notReserved('pwn-echo', ALICE, s.ns) },
    'the author, whom the register names nothing for: refused',
  )
})

t.test('the largest register a namespace can store is read within the API server cost budget', async (t) => {
  const s = await suite.scenario(t, 'large-register')
  await bindRoles(s)
  // 50 authors of 200 names of 64 characters each: about as much as `kubectl apply --server-side` can store (its
  // managedFields list every name again, and etcd stores at most 1.5 MiB of one object); every name is checked
  // against the one asked for.
  const names = (user: number) =>
    Array.from({ length: 200 }, (_, index) =>
      `n${String(user).padStart(2, '0')}-${'x'.repeat(54)}-${index}`.slice(0, 64),
    )
  const authors = [
    ...Array.from({ length: 50 }, (_, user) => ({
      user: user === 0 ? ALICE.user : `author-${user}@example.org`,
      definitionNames: user === 0 ? [...names(user).slice(0, 199), 'web-*'] : names(user),
      ...(user === 0 ? { imagePrefixes: IMAGES } : {}),
    })),
    // bob, with images and no name: only the names policy refuses him (the API server asks the policies in no set order).
    { user: BOB.user, imagePrefixes: IMAGES },
  ]
  await registerAuthors(suite, s.ns, authors)
  const stored = await suite.rest.get<Json>(`${CHALLENGES}/namespaces/${s.ns}/challengeauthors/authors`)
  t.ok(JSON.stringify(stored).length > 1_300_000, `stored: ${JSON.stringify(stored).length} bytes`)
  t.equal(
    await onceSeen(create(s, ALICE, definitionBy(s, 'web-login', ALICE.user)), undefined),
    undefined,
    "alice's prefix, the last of 10,000 names",
  )
  t.strictSame(
    await attempt(create(s, BOB, definitionBy(s, 'bob-web', BOB.user))),
    { status: 403, message: notReserved('bob-web', BOB, s.ns) },
    "bob's, held by nobody: the policy's own words, not a cost error",
  )
})

t.test(
  "alice's instance, her web-login made again by the operator as bob's: Error, never a pod, until the operator's word",
  async (t) => {
    const s = await suite.scenario(t, 'author-changed')
    await bindRoles(s)
    // bob may write definitions here with his images, under no name yet: only the names policy refuses him below.
    await registerAuthors(suite, s.ns, [
      { user: ALICE.user, definitionNames: ['web-login'], imagePrefixes: IMAGES },
      { user: BOB.user, imagePrefixes: IMAGES },
    ])
    const NAME = 'web-login-u-alice'
    t.equal(
      await onceSeen(create(s, ALICE, definitionBy(s, 'web-login', ALICE.user)), undefined),
      undefined,
      'alice: web-login',
    )
    await s.create(s.challenge('web-login', 'alice'))
    const running = await s.until(NAME, (st) => st.phase === 'Running', 'Running')
    t.equal(running.definitionAuthor, ALICE.user, 'the status records alice')

    await remove(s, ALICE, 'web-login')()
    await s.until(NAME, (st) => st.reason === 'DefinitionNotFound', 'Error / DefinitionNotFound')
    await eventually('the workload torn down', async () => (await s.children(NAME)).length === 0)
    t.strictSame(
      await attempt(create(s, BOB, definitionBy(s, 'web-login', BOB.user))),
      { status: 403, message: notReserved('web-login', BOB, s.ns) },
      "bob cannot take alice's deleted name",
    )

    // The operator makes web-login again, as bob's (say alice left and bob takes her challenge over).
    const deletionsBefore = suite.recorder.deletions(s.ns).length
    t.equal(await attempt(create(s, OLIVIA, definitionBy(s, 'web-login', BOB.user))), undefined, 'olivia, as bob')
    const stopped = await s.until(NAME, (st) => st.reason === 'DefinitionAuthorChanged', 'DefinitionAuthorChanged')
    t.strictSame(
      { phase: stopped.phase, message: stopped.message, definitionAuthor: stopped.definitionAuthor },
      {
        phase: 'Error',
        message:
          'ChallengeDefinition "web-login" now names the author "bob@example.org", not "alice@example.org" as when this instance was made: it stays stopped until an operator accepts the new author (the annotation challenge-hooks.dev/accept-definition-author="bob@example.org" on this Challenge) or deletes the instance.',
        definitionAuthor: ALICE.user,
      },
    )
    const quiet = await s.resync()
    t.strictSame(quiet, { moved: [], writes: 0 }, 'synced again: nothing moves')
    t.strictSame(await s.list(`/api/v1/namespaces/${s.ns}/pods`), [], 'no pod')
    t.strictSame(suite.recorder.deletions(s.ns).slice(deletionsBefore), [], 'and none came and went')
    t.strictSame(
      (await suite.recorder.transitionsThrough(s.ns, NAME, 'Error/DefinitionAuthorChanged')).slice(-2),
      ['Error/DefinitionNotFound', 'Error/DefinitionAuthorChanged'],
      'straight from the missing definition to the changed author',
    )

    // The platform cannot say it; the operator can.
    const challenge = `${CHALLENGES}/namespaces/${s.ns}/challenges/${NAME}`
    const annotate = (who: Who, value: string | null) => () =>
      suite.rest.call('PATCH', challenge, {
        body: { metadata: { annotations: { [ACCEPT]: value } } },
        contentType: 'application/merge-patch+json',
        as: who,
      })
    t.strictSame(
      await attempt(annotate(PLATFORM, BOB.user)),
      {
        status: 403,
        message: `${AUTHOR_POLICY}: only an operator may set the annotation challenge-hooks.dev/accept-definition-author (the author of web-login this instance may run with); you are "system:serviceaccount:challenges:ctf-platform"`,
      },
      'the platform may not accept a new author',
    )
    t.equal(await attempt(annotate(OLIVIA, BOB.user)), undefined, 'olivia accepts bob')
    const accepted = await s.until(NAME, (st) => st.phase === 'Running', 'Running on bob’s definition')
    t.equal(accepted.definitionAuthor, BOB.user, 'the status records bob now')
    const [pod] = await s.list(`/api/v1/namespaces/${s.ns}/pods`)
    t.strictSame(
      ((pod?.spec as Json).containers as Json[]).map((container) => container.image),
      [BOBS_IMAGE],
      "bob's pod, once the operator said so",
    )
    t.equal(
      await attempt(() =>
        suite.rest.call('PATCH', challenge, {
          body: { spec: { renewals: 1 } },
          contentType: 'application/merge-patch+json',
          as: PLATFORM,
        }),
      ),
      undefined,
      "the platform's buttons still work on an annotated Challenge",
    )
    t.match(
      await attempt(annotate(PLATFORM, 'mallory@example.org')),
      { status: 403, message: new RegExp(`^${AUTHOR_POLICY.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`) },
      'nor change it',
    )
    t.equal(await attempt(annotate(PLATFORM, null)), undefined, 'removing it is anyone’s')
    const created = await attempt(() =>
      suite.rest.call('POST', `${CHALLENGES}/namespaces/${s.ns}/challenges`, {
        body: (() => {
          const body = s.challenge('web-login', 'bob') as unknown as Json & { metadata: Json }
          body.metadata.annotations = { [ACCEPT]: BOB.user }
          return body
        })(),
        as: PLATFORM,
      }),
    )
    t.match(created, { status: 403, message: /only an operator may set the annotation/ }, 'nor create one with it')
  },
)
