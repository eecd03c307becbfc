// Metacontroller's service account may do everything Metacontroller does for this controller, by this project's
// RBAC alone (the suite's cluster binds nothing else to it), and nothing more: asked of the real authorizer with
// `kubectl auth can-i --as=<service account>` (impersonation). The lifecycle files then run the controller with
// that identity, so every real write is checked too.
import t from 'tap'
import { connect, install, METACONTROLLER_SA } from '../support/kube/harness.js'

const env = await connect(t)
await install(env)

/** verb, resource (`<resource>[.<group>][/<subresource>]`), namespace (undefined: every namespace), why */
type Check = [string, string, string | undefined, string]

const CHILDREN = ['secrets', 'services', 'pods', 'networkpolicies.networking.k8s.io', 'ingresses.networking.k8s.io']

// Children and related objects live in the Challenges' namespaces, whatever they are named; Metacontroller's
// informers list and watch them in all namespaces. It writes children only where challenge-hooks-metacontroller-write
// is bound (challenges-namespace.yaml): in `challenges`, not in kube-system nor in a namespace without the binding.
const ALLOWED: Check[] = [
  ...['get', 'list', 'watch'].flatMap((verb): Check[] => [
    [verb, 'compositecontrollers.metacontroller.k8s.io', undefined, 'its own controllers'],
    [verb, 'decoratorcontrollers.metacontroller.k8s.io', undefined, 'its own controllers'],
    [verb, 'controllerrevisions.metacontroller.k8s.io', undefined, 'its ControllerRevision informer'],
    [verb, 'customresourcedefinitions.apiextensions.k8s.io', undefined, "the parent's CRD (status subresource)"],
    [verb, 'namespaces', undefined, "namespace selectors of related rules; related: the Challenge's namespace"],
    [verb, 'limitranges', undefined, 'related: the LimitRanges beside the Challenge'],
    [verb, 'challenges.challenge-hooks.dev', undefined, 'the parents, and the owner budget (related)'],
    [verb, 'challengedefinitions.challenge-hooks.dev', undefined, 'related: the definition'],
    [verb, 'pods', undefined, 'children: the instance pods'],
    [verb, 'deployments.apps', undefined, "children: an earlier release's Deployment"],
    [verb, 'secrets', undefined, "children (the flag), related (Static flags), the hook's token"],
  ]),
  ['create', 'events', 'chtest-any', 'SyncError events on parents'],
  ['patch', 'events', 'chtest-any', 'events are aggregated by patching'],
  // The parent everywhere: a namespace being deleted loses its RoleBindings, and its Challenges their finalizer.
  ['update', 'challenges.challenge-hooks.dev', 'chtest-unbound', 'its finalizer on the parent'],
  ['patch', 'challenges.challenge-hooks.dev', 'chtest-unbound', 'its finalizer on the parent'],
  ['update', 'challenges.challenge-hooks.dev/status', 'chtest-unbound', "the hook's status"],
  [
    'update',
    'challenges.challenge-hooks.dev/finalizers',
    'chtest-unbound',
    'blockOwnerDeletion on every child (OwnerReferencesPermissionEnforcement)',
  ],
  ...['create', 'update', 'patch', 'delete'].flatMap((verb): Check[] =>
    CHILDREN.map((resource): Check => [verb, resource, 'challenges', 'children']),
  ),
  ['delete', 'deployments.apps', 'challenges', "an earlier release's Deployment is deleted on upgrade"],
  ...['get', 'create', 'update'].map((verb): Check => [
    verb,
    'leases.coordination.k8s.io',
    'metacontroller',
    'leader election',
  ]),
]

const REFUSED: Check[] = [
  ...['kube-system', 'chtest-unbound'].flatMap((namespace) =>
    ['create', 'update', 'delete'].flatMap((verb): Check[] =>
      CHILDREN.map((resource): Check => [verb, resource, namespace, 'no writes outside the challenges namespaces']),
    ),
  ),
  ['create', 'secrets', undefined, 'no cluster-wide writes'],
  ['create', 'challenges.challenge-hooks.dev', 'chtest-any', 'only the platform creates Challenges'],
  ['delete', 'challenges.challenge-hooks.dev', 'chtest-any', 'only the platform deletes Challenges'],
  ['update', 'challengedefinitions.challenge-hooks.dev', 'chtest-any', "definitions are the authors'"],
  ...['create', 'update', 'patch'].map((verb): Check => [
    verb,
    'deployments.apps',
    'challenges',
    'Deployments are no longer made',
  ]),
  ['delete', 'deployments.apps', 'chtest-unbound', 'no writes outside the challenges namespaces'],
  ['get', 'configmaps', 'chtest-any', 'no child or related type'],
  ['get', 'challengeauthors.challenge-hooks.dev', 'chtest-any', "the register of authors is the API server's alone"],
  ['list', 'challengeauthors.challenge-hooks.dev', undefined, "the register of authors is the API server's alone"],
  ['create', 'clusterrolebindings.rbac.authorization.k8s.io', undefined, 'no escalation'],
  ['create', 'leases.coordination.k8s.io', 'kube-system', 'leases only in its own namespace'],
  ['*', '*', undefined, 'no wildcard'],
]

/**
 * `kubectl auth can-i` arguments for `<resource>[/<subresource>]`: kubectl reads `resource/x` as the object named
 * x, so a subresource goes in --subresource (the real API server showed it: a role without `challenges/status`
 * was asked about the Challenge named "status").
 */
function resourceArgs(resource: string): string[] {
  const [name = '', subresource] = resource.split('/')
  return subresource === undefined ? [name] : [name, `--subresource=${subresource}`]
}

async function canI(verb: string, resource: string, namespace: string | undefined): Promise<string> {
  const scope = namespace === undefined ? ['--all-namespaces'] : ['-n', namespace]
  const result = await env.kubectl([
    'auth',
    'can-i',
    verb,
    ...resourceArgs(resource),
    ...scope,
    `--as=${METACONTROLLER_SA}`,
  ])
  return result.stdout.trim()
}

t.test('allowed: every request Metacontroller makes for this controller', async (t) => {
  for (const [verb, resource, namespace, why] of ALLOWED) {
    t.equal(
      await canI(verb, resource, namespace),
      'yes',
      `${verb} ${resource} ${namespace ?? '(all namespaces)'}: ${why}`,
    )
  }
})

t.test('refused: what this controller never needs', async (t) => {
  for (const [verb, resource, namespace, why] of REFUSED) {
    t.equal(
      await canI(verb, resource, namespace),
      'no',
      `${verb} ${resource} ${namespace ?? '(all namespaces)'}: ${why}`,
    )
  }
})

t.test('nothing but this project binds roles to the service account', async (t) => {
  const bindings = await env.rest.get<{
    items: Array<{ metadata: { name: string }; subjects?: Array<{ kind: string; name: string; namespace?: string }> }>
  }>('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings')
  const ours = bindings.items
    .filter((binding) =>
      (binding.subjects ?? []).some(
        (s) => s.kind === 'ServiceAccount' && s.name === 'metacontroller' && s.namespace === 'metacontroller',
      ),
    )
    .map((binding) => binding.metadata.name)
  t.strictSame(
    ours,
    ['challenge-hooks-metacontroller'],
    "only this project's ClusterRoleBinding (no upstream wildcard)",
  )
})

// The other actors of manifests/roles.yaml, asked of the real authorizer by impersonation.
const PLATFORM = ['--as=system:serviceaccount:challenges:ctf-platform']
const AUTHOR = ['--as=alice-author', '--as-group=challenge-authors']

async function canActorI(actor: string[], verb: string, resource: string, namespace: string): Promise<string> {
  const result = await env.kubectl(['auth', 'can-i', verb, ...resourceArgs(resource), '-n', namespace, ...actor])
  return result.stdout.trim()
}

t.test(
  'the CTF platform: Challenges and reading the catalogue in the challenges namespace, never a flag',
  async (t) => {
    const allowed: [string, string][] = [
      ...['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'].map((verb): [string, string] => [
        verb,
        'challenges.challenge-hooks.dev',
      ]),
      ...['get', 'list', 'watch'].map((verb): [string, string] => [verb, 'challengedefinitions.challenge-hooks.dev']),
    ]
    for (const [verb, resource] of allowed)
      t.equal(await canActorI(PLATFORM, verb, resource, 'challenges'), 'yes', `platform: ${verb} ${resource}`)
    const refused: [string, string, string][] = [
      ['get', 'secrets', 'challenges'],
      ['list', 'secrets', 'challenges'],
      ['update', 'challenges.challenge-hooks.dev/status', 'challenges'],
      ['patch', 'challenges.challenge-hooks.dev/status', 'challenges'],
      ['create', 'challengedefinitions.challenge-hooks.dev', 'challenges'],
      ['get', 'pods', 'challenges'],
      ['get', 'challengeauthors.challenge-hooks.dev', 'challenges'],
      ['create', 'challenges.challenge-hooks.dev', 'kube-system'],
      ['get', 'secrets', 'challenge-hooks'],
    ]
    for (const [verb, resource, namespace] of refused)
      t.equal(
        await canActorI(PLATFORM, verb, resource, namespace),
        'no',
        `platform: no ${verb} ${resource} in ${namespace}`,
      )
  },
)

t.test('challenge authors: ChallengeDefinitions only', async (t) => {
  for (const verb of ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete']) {
    t.equal(
      await canActorI(AUTHOR, verb, 'challengedefinitions.challenge-hooks.dev', 'challenges'),
      'yes',
      `author: ${verb} challengedefinitions`,
    )
  }
  for (const verb of ['get', 'list', 'watch']) {
    t.equal(
      await canActorI(AUTHOR, verb, 'challengeauthors.challenge-hooks.dev', 'challenges'),
      'yes',
      `author: ${verb} challengeauthors (which names are theirs)`,
    )
  }
  for (const [verb, resource] of [
    ['get', 'secrets'],
    ['create', 'challenges.challenge-hooks.dev'],
    ['get', 'challenges.challenge-hooks.dev'],
    ['get', 'pods'],
    ['create', 'challengeauthors.challenge-hooks.dev'],
    ['update', 'challengeauthors.challenge-hooks.dev'],
    ['patch', 'challengeauthors.challenge-hooks.dev'],
    ['delete', 'challengeauthors.challenge-hooks.dev'],
  ] as const) {
    t.equal(await canActorI(AUTHOR, verb, resource, 'challenges'), 'no', `author: no ${verb} ${resource}`)
  }
  t.equal(
    await canActorI(AUTHOR, 'create', 'challengedefinitions.challenge-hooks.dev', 'default'),
    'no',
    'author: only in the challenges namespace',
  )
})

t.test('the platform creates a Challenge through the API server, and cannot read its flag', async (t) => {
  const created = await env.kubectl(['create', '-n', 'challenges', '-f', '-', ...PLATFORM], {
    input: JSON.stringify({
      apiVersion: 'challenge-hooks.dev/v1alpha1',
      kind: 'Challenge',
      metadata: {
        name: 'rbac-platform-u-alice',
        labels: { 'challenge-hooks.dev/owner': 'alice', 'challenge-hooks.dev/definition': 'web-login' },
      },
      spec: { definitionRef: { name: 'web-login' }, owner: { kind: 'User', id: 'alice' } },
    }),
  })
  t.match(created.stdout, /challenge\.challenge-hooks\.dev\/rbac-platform-u-alice created/, 'created as the platform')
  const read = await env.kubectl(['get', 'secrets', '-n', 'challenges', ...PLATFORM])
  t.match(read.stderr, /Forbidden.*cannot list resource "secrets"/, 'the flag Secrets stay out of reach')
  await env.kubectl(['delete', 'challenge', 'rbac-platform-u-alice', '-n', 'challenges', '--wait=false'])
})
