// The ValidatingAdmissionPolicies of manifests/, their CEL evaluated in the fast suite (test/support/admission/) for
// each actor and operation, with the API server's semantics and the authorizer answering from the manifests' own
// RBAC (roles.yaml): a mistake in a policy, or a role that grants `override`, fails here in seconds. Expectations
// are written from what the policies say they do (the comments of admission-policy.yaml, docs/security.md): who
// may create, change and delete a ChallengeDefinition, and what labels a Challenge must carry. The same refusals on
// the real API server: test/cluster/admission.test.ts.
import t from 'tap'
import { kubernetesCel } from '../support/admission/cel.js'
import { AdmissionPolicies, type AdmissionAttempt, type Operation } from '../support/admission/policies.js'
import type { User } from '../support/admission/rbac.js'
import { loadManifests } from '../helpers/manifests.js'

type Json = Record<string, unknown>

const objects = loadManifests().map(({ object }) => object as unknown as Json)
const admission = new AdmissionPolicies(objects)
const NS = 'challenges'
const API = 'challenge-hooks.dev/v1alpha1'
const AUTHOR = 'challenge-hooks.dev/author'

t.test('every ValidatingAdmissionPolicy in manifests/ has its binding, and every expression parses', async (t) => {
  t.ok(admission.policies.length >= 2, `${admission.policies.length} policies`)
  for (const policy of admission.policies) {
    const bindings = admission.bindings.filter((binding) => binding.spec.policyName === policy.metadata.name)
    t.strictSame(
      bindings.map((binding) => binding.spec.validationActions),
      [['Deny']],
      `${policy.metadata.name}: one binding, refusing`,
    )
  }
  for (const binding of admission.bindings)
    t.ok(
      admission.policies.some((policy) => policy.metadata.name === binding.spec.policyName),
      `${binding.metadata.name}: binds a policy that exists`,
    )
  for (const { where, expression } of admission.expressions()) {
    const check = kubernetesCel.check(expression)
    t.ok(check.valid, `${where}: ${check.error?.message ?? 'parses and type-checks'}`)
  }
})

// ---- challenge-hooks-definition-authors ----------------------------------------------------------------------------
// Create: the annotation names the creator; an operator may name anyone, or no one. Update and delete: only by the
// author it names, or an operator (the verb `override`, held by challenge-hooks-operator and cluster-admin); deletes
// by the namespace controller while the namespace is being deleted. The annotation never changes (but by an operator).

const alice: User = { username: 'alice@example.org', groups: ['challenge-authors', 'system:authenticated'] }
const bob: User = { username: 'bob@example.org', groups: ['challenge-authors', 'system:authenticated'] }
const olivia: User = { username: 'olivia', groups: ['challenge-operators', 'system:authenticated'] }
const admin: User = { username: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] }
const namespaceController: User = {
  username: 'system:serviceaccount:kube-system:namespace-controller',
  groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system', 'system:authenticated'],
}

function definition(author: string | undefined, spec: Json = {}): Json {
  return {
    apiVersion: API,
    kind: 'ChallengeDefinition',
    metadata: {
      name: 'web-login',
      namespace: NS,
      ...(author === undefined ? {} : { annotations: { [AUTHOR]: author } }),
    },
    spec: { pod: { containers: [{ name: 'app', image: 'registry.test/app' }] }, expose: { port: 8080 }, ...spec },
  }
}

const DEFINITIONS = { group: 'challenge-hooks.dev', version: 'v1alpha1', resource: 'challengedefinitions' }

/**
 * The namespace's register of authors, as an operator writes it: `web-login` is alice's name, and both authors name
 * the test images. The policies that read it are tested in definition-names.test.ts and author-policy.test.ts; here
 * it only lets the rows below meet the authors policy as they would in an installed namespace.
 */
const REGISTER: Json = {
  apiVersion: API,
  kind: 'ChallengeAuthors',
  metadata: { name: 'authors', namespace: NS },
  spec: {
    authors: [
      { user: 'alice@example.org', definitionNames: ['web-login'], imagePrefixes: ['registry.test/'] },
      { user: 'bob@example.org', imagePrefixes: ['registry.test/'] },
    ],
  },
}

function onDefinition(
  user: User,
  operation: Operation,
  before: Json | undefined,
  after: Json | undefined,
  extra: Partial<AdmissionAttempt> = {},
) {
  return admission.admit({
    user,
    operation,
    resource: DEFINITIONS,
    namespace: NS,
    ...(after === undefined ? {} : { object: after }),
    ...(before === undefined ? {} : { oldObject: before }),
    stored: [REGISTER],
    ...extra,
  })
}

/** What the requester hears: allowed, or the HTTP status, the policy and its words. */
function heard(verdict: ReturnType<AdmissionPolicies['admit']>): string {
  if (verdict.allowed) return 'allowed'
  const [first] = verdict.decisions
  return `${verdict.code} ${first?.policy}: ${first?.message}`
}

const DENIED = '403 challenge-hooks-definition-authors'
const namesYou = (user: string) =>
  `${DENIED}: a new ChallengeDefinition names its author: set metadata.annotations["challenge-hooks.dev/author"] to your user name, "${user}"`
const onlyAuthor = (verb: 'change' | 'delete', author: string | undefined, user: string) =>
  `${DENIED}: only its author${author === undefined ? ' (it names none)' : `, "${author}",`} or an operator may ${verb} this ChallengeDefinition; you are "${user}"`
const IMMUTABLE = `${DENIED}: the annotation challenge-hooks.dev/author is immutable (an operator may hand a definition to another author)`

t.test('create: the author names themself; an operator names anyone or no one', async (t) => {
  const rows: [string, User, string | undefined, string][] = [
    ['the author naming herself', alice, alice.username, 'allowed'],
    ['an author naming no one', alice, undefined, namesYou(alice.username)],
    ['an author naming another author', alice, bob.username, namesYou(alice.username)],
    ['the other author naming alice', bob, alice.username, namesYou(bob.username)],
    ['an operator naming an author', olivia, alice.username, 'allowed'],
    ['an operator naming no one', olivia, undefined, 'allowed'],
    ['cluster-admin naming no one', admin, undefined, 'allowed'],
  ]
  for (const [what, user, author, expected] of rows)
    t.equal(heard(onDefinition(user, 'CREATE', undefined, definition(author))), expected, what)
})

t.test("update: only the author it names, or an operator; the annotation is the author's for good", async (t) => {
  const alices = definition(alice.username)
  const edited = definition(alice.username, { displayName: 'Web login, again' })
  const closed = definition(alice.username, { availableUntil: '2000-01-01T00:00:00Z' })
  const exfiltrating = definition(alice.username, {
    network: { egress: 'Internet' },
    pod: { containers: [{ name: 'app', image: 'registry.test/exfiltrate' }] },
  })
  const toBob = definition(bob.username)
  const unnamed = definition(undefined)
  const rows: [string, User, Json, Json, string][] = [
    ['the author edits her definition', alice, alices, edited, 'allowed'],
    ['the author hands it to another author', alice, alices, toBob, IMMUTABLE],
    ['the author removes the annotation', alice, alices, unnamed, IMMUTABLE],
    [
      "the other author ends alice's challenge (availableUntil in the past)",
      bob,
      alices,
      closed,
      onlyAuthor('change', alice.username, bob.username),
    ],
    [
      'the other author swaps the image and opens egress',
      bob,
      alices,
      exfiltrating,
      onlyAuthor('change', alice.username, bob.username),
    ],
    [
      'the other author makes himself the author',
      bob,
      alices,
      toBob,
      onlyAuthor('change', alice.username, bob.username),
    ],
    ['an operator hands it to another author', olivia, alices, toBob, 'allowed'],
    ['an operator edits it', olivia, alices, closed, 'allowed'],
    ['cluster-admin edits it', admin, alices, closed, 'allowed'],
    [
      'an author edits a definition that names no one',
      alice,
      unnamed,
      definition(undefined, { displayName: 'x' }),
      onlyAuthor('change', undefined, alice.username),
    ],
    [
      'an author claims a definition that names no one',
      alice,
      unnamed,
      alices,
      onlyAuthor('change', undefined, alice.username),
    ],
    ['an operator gives it an author', olivia, unnamed, alices, 'allowed'],
  ]
  for (const [what, user, before, after, expected] of rows)
    t.equal(heard(onDefinition(user, 'UPDATE', before, after)), expected, what)
})

t.test(
  'delete: only the author it names, or an operator, or the namespace controller emptying the namespace',
  async (t) => {
    const alices = definition(alice.username)
    const deleting = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: NS,
        labels: { 'kubernetes.io/metadata.name': NS },
        deletionTimestamp: '2026-11-22T12:00:00Z',
      },
    }
    const rows: [string, User, Json, Partial<AdmissionAttempt>, string][] = [
      ['the author deletes her definition', alice, alices, {}, 'allowed'],
      [
        "the other author deletes alice's definition",
        bob,
        alices,
        {},
        onlyAuthor('delete', alice.username, bob.username),
      ],
      [
        'an author deletes one that names no one',
        alice,
        definition(undefined),
        {},
        onlyAuthor('delete', undefined, alice.username),
      ],
      ['an operator deletes it', olivia, alices, {}, 'allowed'],
      ['cluster-admin deletes it', admin, alices, {}, 'allowed'],
      [
        'the namespace controller, the namespace being deleted',
        namespaceController,
        alices,
        { namespaceObject: deleting },
        'allowed',
      ],
      [
        'the namespace controller, the namespace not being deleted',
        namespaceController,
        alices,
        {},
        onlyAuthor('delete', alice.username, namespaceController.username),
      ],
    ]
    for (const [what, user, before, extra, expected] of rows)
      t.equal(heard(onDefinition(user, 'DELETE', before, undefined, extra)), expected, what)
  },
)

t.test("a status write is never an author's edit; other namespaces' requests alike", async (t) => {
  const alices = definition(alice.username)
  t.equal(
    heard(onDefinition(bob, 'UPDATE', alices, alices, { subresource: 'status' })),
    'allowed',
    'challengedefinitions/status is outside the policy (RBAC gives authors no status)',
  )
  // The author role is bound in `challenges` only: an operator bound there is no operator elsewhere.
  t.equal(
    heard(onDefinition(olivia, 'UPDATE', alices, definition(bob.username), { namespace: 'challenges-baseline' })),
    onlyAuthor('change', alice.username, olivia.username),
    'an operator by a RoleBinding in challenges is none in challenges-baseline',
  )
})

// ---- challenge-hooks-challenge-labels ------------------------------------------------------------------------------
// Create and update of a Challenge (the main resource): the labels owner and definition set and equal to the spec's
// owner.id and definitionRef.name; never in the way of a Challenge being deleted (Metacontroller's finalizer).

const platform: User = {
  username: 'system:serviceaccount:challenges:ctf-platform',
  groups: ['system:serviceaccounts', 'system:serviceaccounts:challenges', 'system:authenticated'],
}
const CHALLENGES = { group: 'challenge-hooks.dev', version: 'v1alpha1', resource: 'challenges' }

function challenge(labels: Record<string, string> | undefined, extra: Json = {}): Json {
  return {
    apiVersion: API,
    kind: 'Challenge',
    metadata: { name: 'web-login-u-alice', namespace: NS, ...(labels === undefined ? {} : { labels }), ...extra },
    spec: { definitionRef: { name: 'web-login' }, owner: { kind: 'User', id: 'alice' } },
  }
}
const LABELS = { 'challenge-hooks.dev/owner': 'alice', 'challenge-hooks.dev/definition': 'web-login' }
const OWNER = `422 challenge-hooks-challenge-labels: the label challenge-hooks.dev/owner must be set and equal to spec.owner.id ("alice")`
const DEFINITION = `422 challenge-hooks-challenge-labels: the label challenge-hooks.dev/definition must be set and equal to spec.definitionRef.name ("web-login")`

t.test('a Challenge carries its owner and definition as labels, equal to its spec', async (t) => {
  const on = (operation: Operation, before: Json | undefined, after: Json, subresource?: string) =>
    heard(
      admission.admit({
        user: platform,
        operation,
        resource: CHALLENGES,
        namespace: NS,
        object: after,
        ...(before === undefined ? {} : { oldObject: before }),
        ...(subresource === undefined ? {} : { subresource }),
      }),
    )
  t.equal(on('CREATE', undefined, challenge(LABELS)), 'allowed', 'both labels, equal to the spec')
  t.equal(on('CREATE', undefined, challenge(undefined)), OWNER, 'no labels: the owner label is named first')
  t.equal(
    on('CREATE', undefined, challenge({ ...LABELS, 'challenge-hooks.dev/owner': 'mallory' })),
    OWNER,
    'another owner',
  )
  t.equal(
    on('CREATE', undefined, challenge({ 'challenge-hooks.dev/owner': 'alice' })),
    DEFINITION,
    'no definition label',
  )
  t.equal(
    on('CREATE', undefined, challenge({ ...LABELS, 'challenge-hooks.dev/definition': 'pwn-echo' })),
    DEFINITION,
    'another definition',
  )
  t.equal(
    on('UPDATE', challenge(LABELS), challenge({ ...LABELS, 'challenge-hooks.dev/owner': 'mallory' })),
    OWNER,
    'an update that changes the owner label',
  )
  const deleting = { deletionTimestamp: '2026-11-22T12:00:00Z', finalizers: [] }
  t.equal(
    on('UPDATE', challenge(undefined, deleting), challenge(undefined, deleting)),
    'allowed',
    'a Challenge being deleted (made before the policy, no labels): its finalizer can be removed',
  )
  t.equal(on('UPDATE', challenge(undefined), challenge(undefined), 'status'), 'allowed', 'a status write')
  t.equal(
    heard(
      admission.admit({
        user: platform,
        operation: 'DELETE',
        resource: CHALLENGES,
        namespace: NS,
        oldObject: challenge(undefined),
      }),
    ),
    'allowed',
    'a delete',
  )
})
