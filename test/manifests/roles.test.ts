// Every role of manifests/ pinned rule by rule, and every binding to its subjects, so that a verb added to a role
// (`override` to the authors', which makes every author an operator; a wildcard; a write outside the challenges
// namespaces) fails here in seconds, not only in the cluster suite (test/cluster/rbac.test.ts asks the real
// authorizer). Written from roles.yaml's and metacontroller-rbac.yaml's stated purposes: the platform plays
// Challenges and reads the catalogue; authors write definitions; operators also hold `override`; Metacontroller
// reads its types everywhere and writes children only where challenge-hooks-metacontroller-write is bound. What the
// routing components add to Metacontroller's roles: kustomization.test.ts.
import t from 'tap'
import { loadManifests } from '../helpers/manifests.js'
import { Rbac, type User } from '../support/admission/rbac.js'

type Json = Record<string, unknown>

const objects = loadManifests().map(({ object }) => object as unknown as Json)
const rbacObjects = objects.filter((object) => String(object.apiVersion).startsWith('rbac.authorization.k8s.io/'))
// The base install, and the manifests every component adds as files of its own (patches are not objects).
const named = (kind: string) =>
  rbacObjects
    .filter((object) => object.kind === kind)
    .map((object) => {
      const metadata = object.metadata as { name: string; namespace?: string }
      return metadata.namespace === undefined ? metadata.name : `${metadata.namespace}/${metadata.name}`
    })
    .sort()
const ruleOf = (kind: string, name: string) => {
  const found = rbacObjects.find((object) => {
    const metadata = object.metadata as { name: string; namespace?: string }
    return (
      object.kind === kind &&
      `${metadata.namespace === undefined ? '' : `${metadata.namespace}/`}${metadata.name}` === name
    )
  })
  return found?.rules
}

const READ = ['get', 'list', 'watch']
const GROUP = 'challenge-hooks.dev'

t.test('the roles and bindings of manifests/ are these, no more', async (t) => {
  t.strictSame(named('ClusterRole'), [
    'challenge-gateway',
    'challenge-hooks-author',
    'challenge-hooks-metacontroller',
    'challenge-hooks-metacontroller-write',
    'challenge-hooks-operator',
    'challenge-hooks-platform',
  ])
  t.strictSame(named('Role'), ['metacontroller/challenge-hooks-metacontroller-leader-election'])
  t.strictSame(named('ClusterRoleBinding'), ['challenge-hooks-metacontroller'])
  t.strictSame(named('RoleBinding'), [
    'challenges/challenge-gateway',
    'challenges/challenge-hooks-authors',
    'challenges/challenge-hooks-metacontroller-write',
    'challenges/challenge-hooks-operators',
    'challenges/challenge-hooks-platform',
    'metacontroller/challenge-hooks-metacontroller-leader-election',
  ])
})

t.test(
  'the gateway (a component): Challenges without update, reading the catalogue; no Secrets, no status',
  async (t) => {
    t.strictSame(ruleOf('ClusterRole', 'challenge-gateway'), [
      { apiGroups: [GROUP], resources: ['challenges'], verbs: [...READ, 'create', 'patch', 'delete'] },
      { apiGroups: [GROUP], resources: ['challengedefinitions'], verbs: READ },
    ])
  },
)

t.test('the CTF platform: Challenges, and reading the catalogue; no Secrets, no status', async (t) => {
  t.strictSame(ruleOf('ClusterRole', 'challenge-hooks-platform'), [
    { apiGroups: [GROUP], resources: ['challenges'], verbs: [...READ, 'create', 'patch', 'update', 'delete'] },
    { apiGroups: [GROUP], resources: ['challengedefinitions'], verbs: READ },
  ])
})

t.test('authors: ChallengeDefinitions, the register read, Secrets written; never `override`', async (t) => {
  t.strictSame(ruleOf('ClusterRole', 'challenge-hooks-author'), [
    {
      apiGroups: [GROUP],
      resources: ['challengedefinitions'],
      verbs: [...READ, 'create', 'patch', 'update', 'delete'],
    },
    { apiGroups: [GROUP], resources: ['challengeauthors'], verbs: READ },
    { apiGroups: [''], resources: ['secrets'], verbs: ['create', 'update', 'delete'] },
  ])
})

t.test('operators: every definition with `override`, Challenges, and the register of authors', async (t) => {
  t.strictSame(ruleOf('ClusterRole', 'challenge-hooks-operator'), [
    {
      apiGroups: [GROUP],
      resources: ['challengedefinitions'],
      verbs: [...READ, 'create', 'patch', 'update', 'delete', 'override'],
    },
    { apiGroups: [GROUP], resources: ['challenges'], verbs: [...READ, 'create', 'patch', 'update', 'delete'] },
    { apiGroups: [GROUP], resources: ['challengeauthors'], verbs: [...READ, 'create', 'patch', 'update', 'delete'] },
  ])
})

t.test("Metacontroller: reads its types everywhere, writes the parent's status and finalizer", async (t) => {
  t.strictSame(ruleOf('ClusterRole', 'challenge-hooks-metacontroller'), [
    {
      apiGroups: ['metacontroller.k8s.io'],
      resources: ['compositecontrollers', 'decoratorcontrollers', 'controllerrevisions'],
      verbs: READ,
    },
    { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: READ },
    { apiGroups: [''], resources: ['namespaces', 'limitranges'], verbs: READ },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    { apiGroups: [GROUP], resources: ['challenges'], verbs: [...READ, 'update', 'patch'] },
    { apiGroups: [GROUP], resources: ['challenges/status'], verbs: ['get', 'update', 'patch'] },
    { apiGroups: [GROUP], resources: ['challenges/finalizers'], verbs: ['update'] },
    { apiGroups: [GROUP], resources: ['challengedefinitions'], verbs: READ },
    { apiGroups: [GROUP], resources: ['challengedefinitions/status'], verbs: ['get', 'update', 'patch'] },
    { apiGroups: [GROUP], resources: ['challengedefinitions/finalizers'], verbs: ['update'] },
    { apiGroups: [''], resources: ['secrets', 'services', 'pods'], verbs: READ },
    { apiGroups: ['apps'], resources: ['deployments', 'daemonsets'], verbs: READ },
    { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies', 'ingresses'], verbs: READ },
  ])
  t.strictSame(ruleOf('ClusterRole', 'challenge-hooks-metacontroller-write'), [
    { apiGroups: [''], resources: ['secrets', 'services', 'pods'], verbs: ['create', 'update', 'patch', 'delete'] },
    { apiGroups: ['apps'], resources: ['deployments'], verbs: ['delete'] },
    { apiGroups: ['apps'], resources: ['daemonsets'], verbs: ['create', 'update', 'patch', 'delete'] },
    {
      apiGroups: ['networking.k8s.io'],
      resources: ['networkpolicies', 'ingresses'],
      verbs: ['create', 'update', 'patch', 'delete'],
    },
  ])
  t.strictSame(ruleOf('Role', 'metacontroller/challenge-hooks-metacontroller-leader-election'), [
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: [...READ, 'create', 'update', 'patch'] },
  ])
})

t.test('each binding: its role and its subjects', async (t) => {
  const bindings = rbacObjects
    .filter((object) => object.kind === 'RoleBinding' || object.kind === 'ClusterRoleBinding')
    .map((object) => {
      const metadata = object.metadata as { name: string; namespace?: string }
      return {
        binding: `${object.kind} ${metadata.namespace ?? '-'}/${metadata.name}`,
        roleRef: object.roleRef,
        subjects: object.subjects,
      }
    })
    .sort((a, b) => (a.binding < b.binding ? -1 : 1))
  const roleRef = (kind: string, name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind, name })
  const metacontroller = [{ kind: 'ServiceAccount', name: 'metacontroller', namespace: 'metacontroller' }]
  t.strictSame(bindings, [
    {
      binding: 'ClusterRoleBinding -/challenge-hooks-metacontroller',
      roleRef: roleRef('ClusterRole', 'challenge-hooks-metacontroller'),
      subjects: metacontroller,
    },
    {
      binding: 'RoleBinding challenges/challenge-gateway',
      roleRef: roleRef('ClusterRole', 'challenge-gateway'),
      subjects: [{ kind: 'ServiceAccount', name: 'challenge-gateway', namespace: 'challenge-hooks' }],
    },
    {
      binding: 'RoleBinding challenges/challenge-hooks-authors',
      roleRef: roleRef('ClusterRole', 'challenge-hooks-author'),
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'challenge-authors' }],
    },
    {
      binding: 'RoleBinding challenges/challenge-hooks-metacontroller-write',
      roleRef: roleRef('ClusterRole', 'challenge-hooks-metacontroller-write'),
      subjects: metacontroller,
    },
    {
      binding: 'RoleBinding challenges/challenge-hooks-operators',
      roleRef: roleRef('ClusterRole', 'challenge-hooks-operator'),
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'challenge-operators' }],
    },
    {
      binding: 'RoleBinding challenges/challenge-hooks-platform',
      roleRef: roleRef('ClusterRole', 'challenge-hooks-platform'),
      subjects: [{ kind: 'ServiceAccount', name: 'ctf-platform', namespace: 'challenges' }],
    },
    {
      binding: 'RoleBinding metacontroller/challenge-hooks-metacontroller-leader-election',
      roleRef: roleRef('Role', 'challenge-hooks-metacontroller-leader-election'),
      subjects: metacontroller,
    },
  ])
})

// The same roles asked as the API server's authorizer would be (test/support/admission/rbac.ts), for the questions
// test/cluster/rbac.test.ts asks the real one: each actor's rights, and what none of them has.
const rbac = new Rbac(objects)
const platform: User = { username: 'system:serviceaccount:challenges:ctf-platform', groups: ['system:serviceaccounts'] }
const author: User = { username: 'alice@example.org', groups: ['challenge-authors'] }
const operator: User = { username: 'olivia', groups: ['challenge-operators'] }
const metacontroller: User = { username: 'system:serviceaccount:metacontroller:metacontroller' }

t.test('what each actor may do, asked of RBAC over these roles', async (t) => {
  const can = (user: User, verb: string, resource: string, namespace = 'challenges') => {
    const [name = '', subresource] = resource.split('/')
    const [plural = '', ...group] = name.split('.')
    return rbac.authorize(user, {
      verb,
      apiGroup: group.join('.'),
      resource: plural,
      ...(subresource === undefined ? {} : { subresource }),
      namespace,
    }).allowed
  }
  const rows: [string, User, string, string, string | undefined, boolean][] = [
    ['platform', platform, 'create', 'challenges.challenge-hooks.dev', undefined, true],
    ['platform', platform, 'list', 'challengedefinitions.challenge-hooks.dev', undefined, true],
    ['platform', platform, 'get', 'secrets', undefined, false],
    ['platform', platform, 'patch', 'challenges.challenge-hooks.dev/status', undefined, false],
    ['platform', platform, 'create', 'challengedefinitions.challenge-hooks.dev', undefined, false],
    ['platform', platform, 'create', 'challenges.challenge-hooks.dev', 'kube-system', false],
    ['author', author, 'update', 'challengedefinitions.challenge-hooks.dev', undefined, true],
    ['author', author, 'delete', 'challengedefinitions.challenge-hooks.dev', undefined, true],
    ['author', author, 'override', 'challengedefinitions.challenge-hooks.dev', undefined, false],
    ['author', author, 'get', 'secrets', undefined, false],
    ['author', author, 'get', 'challenges.challenge-hooks.dev', undefined, false],
    ['author', author, 'create', 'challengedefinitions.challenge-hooks.dev', 'default', false],
    ['operator', operator, 'override', 'challengedefinitions.challenge-hooks.dev', undefined, true],
    ['operator', operator, 'override', 'challengedefinitions.challenge-hooks.dev', 'challenges-baseline', false],
    ['operator', operator, 'get', 'secrets', undefined, false],
    ['metacontroller', metacontroller, 'create', 'pods', undefined, true],
    ['metacontroller', metacontroller, 'create', 'pods', 'kube-system', false],
    ['metacontroller', metacontroller, 'update', 'challenges.challenge-hooks.dev/finalizers', 'anywhere', true],
    ['metacontroller', metacontroller, 'update', 'challengedefinitions.challenge-hooks.dev', undefined, false],
    ['metacontroller', metacontroller, 'create', 'deployments.apps', undefined, false],
    ['metacontroller', metacontroller, 'update', 'leases.coordination.k8s.io', 'metacontroller', true],
  ]
  for (const [who, user, verb, resource, namespace, allowed] of rows)
    t.equal(
      can(user, verb, resource, namespace),
      allowed,
      `${who}: ${allowed ? '' : 'no '}${verb} ${resource} in ${namespace ?? 'challenges'}`,
    )
})
