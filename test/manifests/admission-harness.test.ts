// The admission harness itself (test/support/admission/), on policies written here: params found by a binding's
// paramRef (the project's ChallengeAuthors CRD as paramKind), matchConditions, variables read lazily and in order,
// failure policies, messages, validation actions, matching, the authorizer and the functions added to the CEL
// library. What each case expects is the API server's behaviour as k8s.io/apiserver's validating-policy dispatcher
// implements it and the Kubernetes documentation of ValidatingAdmissionPolicy describes it.
import t from 'tap'
import { AdmissionPolicies, type AdmissionAttempt } from '../support/admission/policies.js'
import type { User } from '../support/admission/rbac.js'
import { loadManifests } from '../helpers/manifests.js'

type Json = Record<string, unknown>

const ADMISSION = 'admissionregistration.k8s.io/v1'
const DEFINITIONS = { group: 'challenge-hooks.dev', version: 'v1alpha1', resource: 'challengedefinitions' }
const crds = loadManifests()
  .map(({ object }) => object as unknown as Json)
  .filter((object) => object.kind === 'CustomResourceDefinition')

function policy(name: string, spec: Json, binding: Json = {}): Json[] {
  return [
    {
      apiVersion: ADMISSION,
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: ['challenge-hooks.dev'],
              apiVersions: ['v1alpha1'],
              operations: ['CREATE', 'UPDATE', 'DELETE'],
              resources: ['challengedefinitions'],
            },
          ],
        },
        ...spec,
      },
    },
    {
      apiVersion: ADMISSION,
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name },
      spec: { policyName: name, validationActions: ['Deny'], ...binding },
    },
  ]
}

const alice: User = { username: 'alice', groups: ['challenge-authors'] }
const bob: User = { username: 'bob', groups: ['challenge-authors'] }

function create(name: string, user: User = alice, extra: Partial<AdmissionAttempt> = {}): AdmissionAttempt {
  return {
    user,
    operation: 'CREATE',
    resource: DEFINITIONS,
    namespace: 'challenges',
    object: { apiVersion: 'challenge-hooks.dev/v1alpha1', kind: 'ChallengeDefinition', metadata: { name } },
    ...extra,
  }
}

/**
 * The API server's words for an expression that failed, up to the CEL library's own (cel-go's there, another
 * library's here): `expression '<expression>' resulted in error: `.
 */
const failedWith = (prefix: string, expression: string) =>
  new RegExp(`^${`${prefix}expression '${expression}' resulted in error: `.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\S`)

/** What the requester hears, as in admission-policies.test.ts. */
function heard(control: AdmissionPolicies, attempt: AdmissionAttempt): string {
  const verdict = control.admit(attempt)
  if (verdict.allowed)
    return verdict.warnings.length === 0 ? 'allowed' : `allowed, warned: ${verdict.warnings.join('; ')}`
  return `${verdict.code}: ${verdict.message}`
}

// A name register as the operator would write it: ChallengeAuthors `authors` in the challenges namespace.
const register = (namespace = 'challenges', name = 'authors', labels: Record<string, string> = {}): Json => ({
  apiVersion: 'challenge-hooks.dev/v1alpha1',
  kind: 'ChallengeAuthors',
  metadata: { name, namespace, labels },
  spec: { authors: [{ user: 'alice', definitionNames: ['web-login', 'web-*'] }] },
})
const NAMES_SPEC = {
  paramKind: { apiVersion: 'challenge-hooks.dev/v1alpha1', kind: 'ChallengeAuthors' },
  matchConditions: [{ name: 'creates', expression: "request.operation == 'CREATE'" }],
  variables: [
    { name: 'mine', expression: 'params.spec.authors.filter(a, a.user == request.userInfo.username)' },
    { name: 'names', expression: 'variables.mine.size() == 0 ? [] : variables.mine[0].definitionNames' },
  ],
  validations: [
    {
      expression:
        "variables.names.exists(n, n.endsWith('*') ? object.metadata.name.startsWith(n.substring(0, size(n) - 1)) : object.metadata.name == n)",
      messageExpression: "'the name \"' + object.metadata.name + '\" is not yours, ' + request.userInfo.username",
      reason: 'Forbidden',
    },
  ],
}
const NAMES_DENIED = "ValidatingAdmissionPolicy 'names' with binding 'names' denied request"

t.test('params: the binding finds the ChallengeAuthors object by name in the request namespace', async (t) => {
  const control = new AdmissionPolicies([
    ...crds,
    ...policy('names', NAMES_SPEC, { paramRef: { name: 'authors', parameterNotFoundAction: 'Deny' } }),
  ])
  const stored = [register()]
  t.equal(heard(control, create('web-login', alice, { stored })), 'allowed', 'a name the register gives alice')
  t.equal(heard(control, create('web-xss', alice, { stored })), 'allowed', "a name under alice's prefix web-*")
  t.equal(
    heard(control, create('pwn-echo', alice, { stored })),
    `403: ${NAMES_DENIED}: the name "pwn-echo" is not yours, alice`,
    'a name outside the register',
  )
  t.equal(
    heard(control, create('web-login', bob, { stored })),
    `403: ${NAMES_DENIED}: the name "web-login" is not yours, bob`,
    'bob is not in the register',
  )
  t.equal(
    heard(control, create('web-login', alice, { stored: [register('elsewhere')] })),
    `422: ${NAMES_DENIED}: failed to configure binding: no params found for policy binding with \`Deny\` parameterNotFoundAction`,
    'a register in another namespace is not found: Deny',
  )
  t.equal(
    heard(control, { ...create('web-login', bob, { stored }), operation: 'DELETE', object: undefined, oldObject: {} }),
    'allowed',
    'a false matchCondition (not a create) skips the policy',
  )
  const allowing = new AdmissionPolicies([
    ...crds,
    ...policy('names', NAMES_SPEC, { paramRef: { name: 'authors', parameterNotFoundAction: 'Allow' } }),
  ])
  t.equal(heard(allowing, create('pwn-echo')), 'allowed', 'no params found under Allow: nothing to validate')
  const unbound = new AdmissionPolicies([...crds, ...policy('names', NAMES_SPEC)])
  t.match(
    heard(unbound, create('web-login', alice, { stored })),
    failedWith(`422: ${NAMES_DENIED}: `, NAMES_SPEC.validations[0]?.expression as string),
    'a binding without paramRef evaluates with params null: reading it fails, and Fail denies',
  )
  const fixed = new AdmissionPolicies([
    ...crds,
    ...policy('names', NAMES_SPEC, {
      paramRef: { namespace: 'platform', selector: { matchLabels: { team: 'web' } }, parameterNotFoundAction: 'Deny' },
    }),
  ])
  const second = {
    ...register('platform', 'more', { team: 'web' }),
    spec: { authors: [{ user: 'alice', definitionNames: ['pwn-*'] }] },
  }
  t.equal(
    heard(fixed, create('pwn-echo', alice, { stored: [register('platform', 'authors', { team: 'web' }), second] })),
    `403: ${NAMES_DENIED}: the name "pwn-echo" is not yours, alice`,
    'a selector in a fixed namespace: each param is evaluated on its own, and one refusing refuses',
  )
  const unknownKind = new AdmissionPolicies(
    policy('names', NAMES_SPEC, { paramRef: { name: 'authors', parameterNotFoundAction: 'Deny' } }),
  )
  t.equal(
    heard(unknownKind, create('web-login', alice, { stored })),
    `422: ${NAMES_DENIED}: failed to configure binding: paramKind kind \`ChallengeAuthors.challenge-hooks.dev/v1alpha1\` not known`,
    'a paramKind without its CRD',
  )
})

t.test('variables: read lazily, each seeing only the ones before it; failures under Fail and Ignore', async (t) => {
  const spec = (validation: string, failurePolicy = 'Fail') => ({
    failurePolicy,
    variables: [
      { name: 'broken', expression: 'object.metadata.missing' },
      { name: 'name', expression: 'object.metadata.name' },
      { name: 'shout', expression: 'variables.name.upperAscii()' },
    ],
    validations: [{ expression: validation, message: 'refused' }],
  })
  const run = (validation: string, failurePolicy?: string) =>
    heard(new AdmissionPolicies(policy('vars', spec(validation, failurePolicy))), create('web-login'))
  const denied = "ValidatingAdmissionPolicy 'vars' with binding 'vars' denied request"
  t.equal(
    run("variables.shout == 'WEB-LOGIN'"),
    'allowed',
    'a variable reads an earlier one; the broken one is never read',
  )
  t.equal(run("variables.shout == 'x'"), `422: ${denied}: refused`, 'false: the message, reason Invalid')
  t.match(
    run("variables.broken == 'x'"),
    failedWith(`422: ${denied}: `, "variables.broken == 'x'"),
    'reading the broken variable: an error, denied under Fail',
  )
  t.equal(run("variables.broken == 'x'", 'Ignore'), 'allowed', 'the same under Ignore')
  t.equal(run("true || variables.broken == 'x'"), 'allowed', "CEL's || absorbs the error")
  const later = new AdmissionPolicies(
    policy('order', {
      variables: [
        { name: 'first', expression: 'variables.second' },
        { name: 'second', expression: 'true' },
      ],
      validations: [{ expression: 'variables.first' }],
    }),
  )
  t.match(
    heard(later, create('web-login')),
    failedWith("422: ValidatingAdmissionPolicy 'order' with binding 'order' denied request: ", 'variables.first'),
    'a variable cannot read a later one',
  )
})

t.test('matchConditions: false skips, an error applies the failure policy; messages and their fallbacks', async (t) => {
  const conditions = (failurePolicy: string) =>
    new AdmissionPolicies(
      policy('cond', {
        failurePolicy,
        matchConditions: [
          { name: 'named', expression: "object.metadata.name != 'skip'" },
          { name: 'broken', expression: "object.metadata.missing == 'x'" },
        ],
        validations: [{ expression: 'false', message: 'reached' }],
      }),
    )
  t.equal(heard(conditions('Fail'), create('skip')), 'allowed', 'one false condition skips, the error beside it too')
  t.match(
    heard(conditions('Fail'), create('web-login')),
    failedWith(
      "422: ValidatingAdmissionPolicy 'cond' with binding 'cond' denied request: ",
      "object.metadata.missing == 'x'",
    ),
    'an error and no false: Fail denies with the error',
  )
  t.equal(heard(conditions('Ignore'), create('web-login')), 'allowed', 'Ignore skips the policy')
  const messages = new AdmissionPolicies(
    policy('words', {
      validations: [
        { expression: "object.metadata.name != 'a'", messageExpression: "''", message: 'the message' },
        {
          expression: "object.metadata.name != 'b'",
          messageExpression: 'object.metadata.missing',
          message: 'fell back',
        },
        { expression: "object.metadata.name != 'c'" },
        {
          expression: "object.metadata.name != 'd'",
          messageExpression: "'asked ' + string(authorizer.group('').resource('pods').check('get').allowed())",
          message: 'no authorizer in a messageExpression',
        },
        { expression: "object.metadata.name != 'e'", messageExpression: "'two\\nlines'", message: 'one line' },
      ],
    }),
  )
  const words = (name: string) => heard(messages, create(name)).replace(/^.*denied request: /, '')
  t.equal(words('a'), 'the message', 'an empty messageExpression: the message')
  t.equal(words('b'), 'fell back', 'a failing messageExpression: the message')
  t.equal(words('c'), "failed expression: object.metadata.name != 'c'", 'neither: the expression')
  t.equal(words('d'), 'no authorizer in a messageExpression', 'a messageExpression has no authorizer')
  t.equal(words('e'), 'one line', 'a message of two lines is not used')
})

t.test('validation actions, reasons and codes; matching by rules, selectors and the binding', async (t) => {
  const refuse = (reason?: string) => ({
    validations: [{ expression: 'false', message: 'no', ...(reason === undefined ? {} : { reason }) }],
  })
  t.equal(
    heard(new AdmissionPolicies(policy('warn', refuse(), { validationActions: ['Warn'] })), create('x')),
    "allowed, warned: Validation failed for ValidatingAdmissionPolicy 'warn' with binding 'warn': no",
    'Warn: allowed with a warning',
  )
  const audited = new AdmissionPolicies(policy('audit', refuse(), { validationActions: ['Audit'] })).admit(create('x'))
  t.strictSame([audited.allowed, audited.decisions.map((d) => d.action)], [true, ['Audit']], 'Audit: allowed, recorded')
  for (const [reason, code] of [
    ['Forbidden', 403],
    ['Unauthorized', 401],
    ['RequestEntityTooLarge', 413],
    ['Invalid', 422],
  ] as const) {
    t.equal(new AdmissionPolicies(policy('r', refuse(reason))).admit(create('x')).code, code, `${reason}: ${code}`)
  }
  const matching = (constraints: Json, binding: Json = {}) =>
    new AdmissionPolicies(policy('m', { matchConstraints: constraints, ...refuse() }, binding))
  const rule = (extra: Json) => ({
    apiGroups: ['challenge-hooks.dev'],
    apiVersions: ['*'],
    operations: ['*'],
    resources: ['challengedefinitions'],
    ...extra,
  })
  const status = { ...create('x'), operation: 'UPDATE' as const, subresource: 'status', oldObject: {} }
  t.equal(
    matching({ resourceRules: [rule({})] }).admit(status).allowed,
    true,
    'a resource rule leaves out its subresources',
  )
  t.equal(
    matching({ resourceRules: [rule({ resources: ['challengedefinitions/status'] })] }).admit(status).allowed,
    false,
    'a subresource rule takes them',
  )
  t.equal(matching({ resourceRules: [rule({ resources: ['*/status'] })] }).admit(status).allowed, false, '*/status')
  t.equal(
    matching({ resourceRules: [rule({ resourceNames: ['y'] })] }).admit(create('x')).allowed,
    true,
    'resourceNames',
  )
  t.equal(
    matching({ resourceRules: [rule({})], excludeResourceRules: [rule({ operations: ['CREATE'] })] }).admit(create('x'))
      .allowed,
    true,
    'excludeResourceRules',
  )
  const labelled = (labels: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'challenges', labels },
  })
  const bySelector = matching({
    resourceRules: [rule({})],
    namespaceSelector: { matchExpressions: [{ key: 'ctf', operator: 'In', values: ['yes'] }] },
  })
  t.equal(
    bySelector.admit(create('x', alice, { namespaceObject: labelled({ ctf: 'yes' }) })).allowed,
    false,
    'namespace selected',
  )
  t.equal(
    bySelector.admit(create('x', alice, { namespaceObject: labelled({}) })).allowed,
    true,
    'namespace not selected',
  )
  const byObject = matching({ resourceRules: [rule({})], objectSelector: { matchLabels: { checked: 'true' } } })
  t.equal(byObject.admit(create('x')).allowed, true, 'object not selected')
  const narrowed = matching(
    { resourceRules: [rule({})] },
    { matchResources: { resourceRules: [rule({ operations: ['DELETE'] })] } },
  )
  t.equal(narrowed.admit(create('x')).allowed, true, "the binding's matchResources narrow the policy's")
})

t.test("the authorizer answers from the Roles and bindings given; Kubernetes' string functions", async (t) => {
  const rbac: Json[] = [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'reader' },
      rules: [
        { apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['get'] },
        {
          apiGroups: ['challenge-hooks.dev'],
          resources: ['challengedefinitions'],
          resourceNames: ['mine'],
          verbs: ['update'],
        },
        { nonResourceURLs: ['/healthz'], verbs: ['get'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'readers', namespace: 'challenges' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'reader' },
      subjects: [
        { kind: 'User', name: 'alice' },
        { kind: 'ServiceAccount', name: 'bot', namespace: 'challenges' },
      ],
    },
  ]
  const check = (expression: string, user: User = alice, name = 'x') =>
    new AdmissionPolicies([...rbac, ...policy('authz', { validations: [{ expression, message: 'no' }] })]).admit(
      create(name, user),
    ).allowed
  t.equal(
    check("authorizer.group('').resource('pods').namespace('challenges').check('get').allowed()"),
    true,
    'granted',
  )
  t.equal(
    check("authorizer.group('').resource('pods').namespace('challenges').check('get').allowed()", bob),
    false,
    'not bob',
  )
  t.equal(
    check("authorizer.group('').resource('pods').namespace('other').check('get').allowed()"),
    false,
    'other namespace',
  )
  t.equal(
    check("authorizer.group('').resource('pods').subresource('log').namespace('challenges').check('get').allowed()"),
    true,
    'a subresource',
  )
  t.equal(
    check("authorizer.group('').resource('pods').subresource('exec').namespace('challenges').check('get').allowed()"),
    false,
    'another subresource',
  )
  t.equal(
    check("authorizer.requestResource.check('update').allowed()", alice, 'mine'),
    true,
    'requestResource, by name',
  )
  t.equal(check("authorizer.requestResource.check('update').allowed()", alice, 'theirs'), false, 'another name')
  t.equal(
    check(
      "authorizer.serviceAccount('challenges', 'bot').group('').resource('pods').namespace('challenges').check('get').allowed()",
      bob,
    ),
    true,
    'serviceAccount(): as that service account',
  )
  t.equal(check("authorizer.path('/healthz').check('get').allowed()"), false, 'a RoleBinding grants no path')
  t.equal(
    check("authorizer.path('/healthz').check('get').allowed()", { username: 'root', groups: ['system:masters'] }),
    true,
    'system:masters may do anything',
  )
  const strings: [string, boolean][] = [
    ["'a-b-c'.replace('-', '.') == 'a.b.c'", true],
    ["'a-b-c'.replace('-', '.', 1) == 'a.b-c'", true],
    ["'registry.test/app:1.0'.find('[0-9.]+$') == '1.0'", true],
    ["'a1b22c333'.findAll('[0-9]+') == ['1', '22', '333']", true],
    ["'web-*'.substring(0, 4) == 'web-' && 'Web'.lowerAscii() == 'web' && 'a,b'.split(',') == ['a', 'b']", true],
  ]
  for (const [expression, expected] of strings) t.equal(check(expression), expected, expression)
})
