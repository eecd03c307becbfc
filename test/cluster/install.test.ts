// An operator's first contact, against a real API server: `kubectl apply --server-side -k manifests/` with no
// error and no warning, the CRDs structural and established, the admission policy type-checked without a
// warning, and the examples accepted.
import t from 'tap'
import { kubectlOk } from '../support/kube/kubectl.js'
import { eventually } from '../support/eventually.js'
import { connect, install, type Json } from '../support/kube/harness.js'
import { repoRoot } from '../support/kube/controlplane.js'
import { assertPrintable } from './printing.js'

const env = await connect(t)

t.test('kubectl apply --server-side -k manifests/: every object applied, no warning', async (t) => {
  const { stdout, stderr } = await install(env)
  t.equal(stderr, '', 'kubectl printed no warning')
  const lines = stdout.trim().split('\n')
  t.ok(lines.length >= 15, `every object is reported (${lines.length})`)
  for (const line of lines) t.match(line, /^\S+ serverside-applied$/, line)
  for (const object of [
    'customresourcedefinition.apiextensions.k8s.io/challenges.challenge-hooks.dev',
    'compositecontroller.metacontroller.k8s.io/challenge-hooks',
    'validatingadmissionpolicy.admissionregistration.k8s.io/challenge-hooks-challenge-labels',
  ]) {
    t.ok(lines.includes(`${object} serverside-applied`), `${object} applied`)
  }
  // A second apply changes nothing and still warns about nothing.
  const again = await install(env)
  t.equal(again.stderr, '', 'a second apply prints no warning either')
})

t.test('the CRDs are structural, their names accepted, established', async (t) => {
  for (const name of [
    'challenges.challenge-hooks.dev',
    'challengedefinitions.challenge-hooks.dev',
    'challengeauthors.challenge-hooks.dev',
  ]) {
    const crd = await env.rest.get<{ status: { conditions: Json[] } }>(
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
    )
    const conditions = Object.fromEntries(crd.status.conditions.map((c) => [c.type, c.status]))
    t.equal(conditions.Established, 'True', `${name}: Established`)
    t.equal(conditions.NamesAccepted, 'True', `${name}: NamesAccepted`)
    t.notOk('NonStructuralSchema' in conditions, `${name}: no NonStructuralSchema condition`)
  }
})

t.test('the admission policies type-check against their schemas without a warning', async (t) => {
  for (const name of [
    'challenge-hooks-challenge-labels',
    'challenge-hooks-definition-names',
    'challenge-hooks-challenge-author',
  ]) {
    const policy = await eventually(`${name} to be type-checked`, async () => {
      const vap = await env.rest.get<{
        metadata: { generation: number }
        status?: { observedGeneration?: number; typeChecking?: Json }
      }>(`/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${name}`)
      return vap.status?.observedGeneration === vap.metadata.generation ? vap : undefined
    })
    t.strictSame(policy.status?.typeChecking, {}, `${name}: type-checked (by kube-controller-manager), no warnings`)
    const binding = await env.rest.get<{ spec: Json }>(
      `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/${name}`,
    )
    t.strictSame(binding.spec.validationActions, ['Deny'], `${name}: its binding denies`)
  }
})

t.test('the examples apply, and are what a kubectl get shows', async (t) => {
  const applied = await kubectlOk(env.kubectl, ['apply', '--server-side', '-k', 'manifests/examples/'], {
    cwd: repoRoot,
  })
  t.equal(applied.stderr, '', 'no warning')
  t.strictSame(applied.stdout.trim().split('\n').sort(), [
    'challenge.challenge-hooks.dev/pwn-echo.u.alice serverside-applied',
    'challenge.challenge-hooks.dev/web-login.u.alice serverside-applied',
    'challengedefinition.challenge-hooks.dev/pwn-echo serverside-applied',
    'challengedefinition.challenge-hooks.dev/web-login serverside-applied',
  ])
  const crd = await env.rest.get<Json>(
    '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/challengedefinitions.challenge-hooks.dev',
  )
  const rows = await assertPrintable(t, env.kubectl, 'chaldef', 'challenges', crd)
  t.match(
    rows['pwn-echo'],
    {
      'DISPLAY NAME': 'Pwn Echo',
      EXPOSE: 'NodePort',
      PORT: '1337',
      LIFETIME: '3600',
      EGRESS: 'None',
      PROFILE: 'Restricted',
      AGE: /^\d+s$/,
    },
    'pwn-echo, defaults filled in',
  )
  t.hasStrict(
    rows['web-login'],
    {
      'DISPLAY NAME': 'Web Login',
      EXPOSE: 'HTTP',
      PORT: '8080',
      LIFETIME: '1800',
      EGRESS: 'DNS',
      PROFILE: 'Restricted',
    },
    'web-login',
  )
  // Gone again before any controller runs: no finalizer yet, so they go at once.
  await kubectlOk(env.kubectl, ['delete', '-k', 'manifests/examples/', '--wait=true'], { cwd: repoRoot })
})
