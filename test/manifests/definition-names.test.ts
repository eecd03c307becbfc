// A definition's name is its author's (docs/api.md, "Who may create which name"), held by the API server: the
// register ChallengeAuthors and what its definitionNames accept, the policy challenge-hooks-definition-names that
// reads it as its parameter, the policy challenge-hooks-challenge-author that keeps the operator's word to
// operators, and who may read and write the register (manifests/roles.yaml). What the expressions decide is proven
// on the real API server (test/cluster/definition-names.test.ts); here, in seconds, that the pieces are wired so.
import t from 'tap'
import { join } from 'node:path'
import { Ajv } from 'ajv'
import {
  loadCrdSchema,
  loadManifests,
  readYamlDocuments,
  repoRoot,
  toAjvSchema,
  type Schema,
} from '../helpers/manifests.js'

const objects = loadManifests().map((m) => m.object)
function find(kind: string, name: string): Record<string, unknown> & { spec: Record<string, unknown> } {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name)
  if (found === undefined) throw new Error(`no ${kind} ${name} under manifests/`)
  return found as never
}

const register = loadCrdSchema('ChallengeAuthors')
const names = (
  (((register.properties as Record<string, Schema>).spec as Schema).properties as Record<string, Schema>)
    .authors as Schema
).items as Schema
const definitionNames = (names.properties as Record<string, Schema>).definitionNames as Schema

t.test('definitionNames: exact DNS names, or a prefix of one with a final *; never * alone', async (t) => {
  const check = new Ajv({ strict: false }).compile(toAjvSchema(definitionNames.items as Schema))
  const rows: [string, boolean][] = [
    ['web-login', true],
    ['web-*', true],
    ['w*', true],
    ['web*', true],
    ['a', true],
    ['*', false],
    ['web-*-login', false],
    ['**', false],
    ['Web-login', false],
    ['-web', false],
    ['web-', false],
    ['web.login', false],
    ['', false],
    ['x'.repeat(64), true],
    ['x'.repeat(65), false],
  ]
  for (const [name, accepted] of rows)
    t.equal(check(name), accepted, `${JSON.stringify(name)}: ${accepted ? 'accepted' : 'refused'}`)
  t.strictSame(definitionNames['x-kubernetes-list-type'], 'set', 'a name once per author')
})

t.test('the policy challenge-hooks-definition-names: every create of a definition, against `authors`', async (t) => {
  const policy = find('ValidatingAdmissionPolicy', 'challenge-hooks-definition-names')
  t.strictSame(policy.spec.failurePolicy, 'Fail')
  t.strictSame(policy.spec.paramKind, { apiVersion: 'challenge-hooks.dev/v1alpha1', kind: 'ChallengeAuthors' })
  t.strictSame(policy.spec.matchConstraints, {
    resourceRules: [
      {
        apiGroups: ['challenge-hooks.dev'],
        apiVersions: ['v1alpha1'],
        operations: ['CREATE'],
        resources: ['challengedefinitions'],
      },
    ],
  })
  t.notOk('matchConditions' in policy.spec, 'no create is left out (the parameter is looked up before them anyway)')
  const validations = policy.spec.validations as { expression: string; reason: string }[]
  t.equal(validations.length, 1)
  t.equal(validations[0]?.reason, 'Forbidden')
  const variables = Object.fromEntries(
    (policy.spec.variables as { name: string; expression: string }[]).map((v) => [v.name, v.expression]),
  )
  t.match(
    variables.operator,
    /\.resource\('challengedefinitions'\)\.namespace\(request\.namespace\).*\.check\('override'\)\.allowed\(\)$/,
  )
  t.equal(variables.requester, 'request.userInfo.username')
  t.match(variables.holders, /params\.spec\.authors/, "the parameter's authors")
  t.strictSame(find('ValidatingAdmissionPolicyBinding', 'challenge-hooks-definition-names').spec, {
    policyName: 'challenge-hooks-definition-names',
    validationActions: ['Deny'],
    // No namespace: the request's own; and no register, no create.
    paramRef: { name: 'authors', parameterNotFoundAction: 'Deny' },
  })
})

t.test('the policy challenge-hooks-challenge-author: the operator word on a Challenge is an operator’s', async (t) => {
  const policy = find('ValidatingAdmissionPolicy', 'challenge-hooks-challenge-author')
  t.strictSame(policy.spec.failurePolicy, 'Fail')
  t.strictSame(policy.spec.matchConstraints, {
    resourceRules: [
      {
        apiGroups: ['challenge-hooks.dev'],
        apiVersions: ['v1alpha1'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['challenges'],
      },
    ],
  })
  t.match(JSON.stringify(policy.spec.matchConditions), /challenge-hooks\.dev\/accept-definition-author/)
  const variables = Object.fromEntries(
    (policy.spec.variables as { name: string; expression: string }[]).map((v) => [v.name, v.expression]),
  )
  t.match(variables.operator, /\.resource\('challengedefinitions'\).*\.check\('override'\)\.allowed\(\)$/)
  t.strictSame(find('ValidatingAdmissionPolicyBinding', 'challenge-hooks-challenge-author').spec, {
    policyName: 'challenge-hooks-challenge-author',
    validationActions: ['Deny'],
  })
})

t.test('the register: authors read it, operators write it, nobody else touches it', async (t) => {
  const rulesOn = (kind: string, name: string) =>
    ((find(kind, name) as { rules?: { resources: string[]; verbs: string[] }[] }).rules ?? [])
      .filter((rule) => rule.resources.some((resource) => resource.startsWith('challengeauthors') || resource === '*'))
      .map((rule) => rule.verbs)
  t.strictSame(rulesOn('ClusterRole', 'challenge-hooks-author'), [['get', 'list', 'watch']], 'authors: read')
  t.strictSame(
    rulesOn('ClusterRole', 'challenge-hooks-operator'),
    [['get', 'list', 'watch', 'create', 'patch', 'update', 'delete']],
    'operators: everything',
  )
  for (const name of [
    'challenge-hooks-platform',
    'challenge-hooks-metacontroller',
    'challenge-hooks-metacontroller-write',
  ])
    t.strictSame(rulesOn('ClusterRole', name), [], `${name}: nothing`)
})

t.test('the example register of docs/install.md is valid, and names alice for the example challenges', async (t) => {
  const [example] = readYamlDocuments(join(repoRoot, 'docs/examples/challenge-authors.yaml')) as Record<
    string,
    unknown
  >[]
  const check = new Ajv({ strict: false }).compile(toAjvSchema(register))
  t.ok(check(example), JSON.stringify(check.errors))
  t.strictSame((example?.metadata as Record<string, unknown>).name, 'authors')
  t.notOk('namespace' in (example?.metadata as object), 'applied with -n into each challenges namespace')
  const examples = [
    'manifests/examples/web-login.yaml',
    'manifests/examples/pwn-echo.yaml',
    'manifests/examples/tls/pwn-tls.yaml',
  ]
    .flatMap((file) => readYamlDocuments(join(repoRoot, file)) as { kind: string; metadata: { name: string } }[])
    .filter((object) => object.kind === 'ChallengeDefinition')
    .map((object) => object.metadata.name)
  const alice = ((example?.spec as { authors: { user: string; definitionNames: string[] }[] }).authors ?? []).find(
    (author) => author.user === 'alice@example.org',
  )
  t.strictSame(alice?.definitionNames, examples, "every example definition's name is alice's")
})
