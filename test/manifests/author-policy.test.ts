// The policies that hold the register of authors (manifests/author-policy.yaml), the author's role, and the register's
// own schema, read offline: what each policy matches, whom it exempts, what it reads and what happens without a
// register. What the API server answers to each rule is proved on a real one (test/cluster/confidentiality.test.ts).
import t from 'tap'
import {
  ValidatingAdmissionPolicy,
  ValidatingAdmissionPolicyBinding,
} from 'kubernetes-models/admissionregistration.k8s.io/v1'
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1'
import { loadManifests, validateAgainstCrd, type ManifestObject } from '../helpers/manifests.js'

const objects = loadManifests()
function find(kind: string, name: string): ManifestObject {
  const found = objects.filter(({ object }) => object.kind === kind && object.metadata.name === name)
  if (found.length !== 1) throw new Error(`${found.length} ${kind} named ${name}`)
  return (found[0] as { object: ManifestObject }).object
}
const policy = (name: string) => new ValidatingAdmissionPolicy(find('ValidatingAdmissionPolicy', name))
const binding = (name: string) =>
  new ValidatingAdmissionPolicyBinding(find('ValidatingAdmissionPolicyBinding', name) as never)

const REGISTER = { apiVersion: 'challenge-hooks.dev/v1alpha1', kind: 'ChallengeAuthors' }
const OPERATOR =
  "!authorizer.group('challenge-hooks.dev').resource('challengedefinitions').namespace(request.namespace).name(request.name).check('override').allowed()"
const WRITES_WITHOUT_READING =
  "!authorizer.group('').resource('secrets').namespace(request.namespace).check('get').allowed()"
const SECRETS = { apiGroups: [''], apiVersions: ['v1'], resources: ['secrets'] }

t.test('the definitions: every create and update by anyone but an operator, against the register', async (t) => {
  const spec = policy('challenge-hooks-definition-sources').spec
  t.equal(spec?.failurePolicy, 'Fail')
  t.strictSame(spec?.paramKind, REGISTER)
  // Not DELETE: a namespace being deleted may lose its register before its definitions.
  t.strictSame(spec?.matchConstraints?.resourceRules, [
    {
      apiGroups: ['challenge-hooks.dev'],
      apiVersions: ['v1alpha1'],
      operations: ['CREATE', 'UPDATE'],
      resources: ['challengedefinitions'],
    },
  ])
  // A write naming another author, or none, is challenge-hooks-definition-authors' to refuse (admission-policy.yaml).
  t.strictSame(spec?.matchConditions, [
    { name: 'not-an-operator', expression: OPERATOR },
    {
      name: 'by-its-author',
      expression:
        "has(object.metadata.annotations) && 'challenge-hooks.dev/author' in object.metadata.annotations && object.metadata.annotations['challenge-hooks.dev/author'] == request.userInfo.username",
    },
  ])
  const validations = spec?.validations ?? []
  t.strictSame(
    validations.map((v) => [v.expression, v.reason]),
    [
      ['size(variables.entries) > 0', 'Forbidden'],
      ['size(variables.foreignImages) == 0', 'Forbidden'],
      ['size(variables.foreignPullSecrets) == 0', 'Forbidden'],
      ['size(variables.foreignSecretRefs) == 0', 'Forbidden'],
    ],
    'the author is listed; images, pull Secrets and Secret references are theirs',
  )
  // A messageExpression has no authorizer, and reads the variables: the authorizer is asked in the match only.
  for (const variable of spec?.variables ?? []) t.notMatch(variable.expression, /authorizer/, variable.name)
  const variables = new Map((spec?.variables ?? []).map((v) => [v.name, v.expression]))
  t.match(variables.get('author'), "object.metadata.annotations['challenge-hooks.dev/author']", 'the annotated author')
  t.match(variables.get('foreignImages'), 'c.image.startsWith(p)', 'images by prefix, as written')
  t.match(variables.get('foreignSecretRefs'), "!e.valueFrom.secretKeyRef.name.endsWith('-flag')")
  t.match(variables.get('foreignSecretRefs'), 'variables.otherPrefixes.exists', "never under another author's prefix")
  t.strictSame(binding('challenge-hooks-definition-sources').spec, {
    policyName: 'challenge-hooks-definition-sources',
    paramRef: { name: 'authors', parameterNotFoundAction: 'Deny' },
    validationActions: ['Deny'],
  })
})

t.test("the authors' Secrets: whoever writes Secrets without reading them writes only their own", async (t) => {
  const own = policy('challenge-hooks-author-secrets').spec
  t.equal(own?.failurePolicy, 'Fail')
  t.equal(own?.paramKind, undefined, 'no register needed: every Secret write of the namespace passes through it')
  t.strictSame(own?.matchConstraints?.resourceRules, [{ ...SECRETS, operations: ['CREATE', 'UPDATE', 'DELETE'] }])
  t.strictSame(own?.matchConditions, [{ name: 'writes-without-reading', expression: WRITES_WITHOUT_READING }])
  const rules = (own?.validations ?? []).map((v) => v.expression)
  t.equal(rules.length, 8)
  t.match(rules[0], "request.operation == 'CREATE' || variables.authorBefore != ''", 'replace and delete: theirs')
  t.match(rules[1], 'variables.authorAfter == variables.requester', 'annotated with the requester')
  t.match(rules[2], "object.metadata.labels['challenge-hooks.dev/author-secret'] == 'true'", 'the marker label')
  t.match(rules[4], "object.type == 'Opaque'", 'no service-account token or pull Secret')
  t.match(rules[5], "!object.metadata.name.endsWith('-flag')")
  t.strictSame(binding('challenge-hooks-author-secrets').spec, {
    policyName: 'challenge-hooks-author-secrets',
    validationActions: ['Deny'],
  })

  const names = policy('challenge-hooks-author-secret-names').spec
  t.strictSame(names?.paramKind, REGISTER)
  t.strictSame(names?.matchConstraints?.resourceRules, [{ ...SECRETS, operations: ['CREATE'] }], 'a name never changes')
  t.strictSame(names?.matchConditions, [{ name: 'writes-without-reading', expression: WRITES_WITHOUT_READING }])
  t.strictSame(
    (names?.validations ?? []).map((v) => v.expression),
    [
      "variables.prefix != '' && object.metadata.name.startsWith(variables.prefix) && !variables.otherPrefixes.exists(p, object.metadata.name.startsWith(p))",
    ],
  )
  // Only the Secrets policy 1 makes every author label: Metacontroller's flag Secrets never wait on a register.
  t.strictSame(binding('challenge-hooks-author-secret-names').spec, {
    policyName: 'challenge-hooks-author-secret-names',
    paramRef: { name: 'authors', parameterNotFoundAction: 'Deny' },
    matchResources: { objectSelector: { matchLabels: { 'challenge-hooks.dev/author-secret': 'true' } } },
    validationActions: ['Deny'],
  })
})

t.test('the author role: definitions, and Secrets written but never read or patched', async (t) => {
  t.strictSame(new ClusterRole(find('ClusterRole', 'challenge-hooks-author') as never).rules, [
    {
      apiGroups: ['challenge-hooks.dev'],
      resources: ['challengedefinitions'],
      verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'],
    },
    { apiGroups: ['challenge-hooks.dev'], resources: ['challengeauthors'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['secrets'], verbs: ['create', 'update', 'delete'] },
  ])
})

t.test("the register's schema: image prefixes end a component, a Secret prefix ends in a dash", async (t) => {
  const register = (author: Record<string, unknown>) => ({
    ...REGISTER,
    metadata: { name: 'authors' },
    spec: { authors: [{ user: 'alice@example.org', ...author }] },
  })
  t.strictSame(
    validateAgainstCrd(
      'ChallengeAuthors',
      register({
        imagePrefixes: ['registry.example.org/alice/', 'docker.io/library/nginx:', 'ghcr.io/alice/web@'],
        imagePullSecrets: ['alice-pull'],
        secretPrefix: 'alice-',
      }),
    ),
    [],
    'a register as install.md writes it',
  )
  t.strictSame(
    validateAgainstCrd('ChallengeAuthors', register({ imagePrefixes: ['registry.example.org/alice'] })),
    ['/spec/authors/0/imagePrefixes/0 must match pattern "[/:@]$"'],
    'a prefix that would let …/alice-other/ through',
  )
  t.strictSame(
    validateAgainstCrd('ChallengeAuthors', register({ secretPrefix: 'alice' })),
    ['/spec/authors/0/secretPrefix must match pattern "^[a-z0-9][-a-z0-9]*-$"'],
    'a Secret prefix without its dash',
  )
})
