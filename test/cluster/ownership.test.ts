// Children the instance does not own, on the real API server. A Secret someone made under the flag Secret's name
// before the Challenge: Metacontroller's create fails with AlreadyExists (which it ignores) and it never claims the
// object, so the hook never sees it as a child. A NetworkPolicy the API server refuses: never created at all. In
// both the pod must never run (it would mount the foreign flag, or run unisolated), and the instance is never Running.
import t from 'tap'
import { eventually } from '../support/eventually.js'
import { startSuite, type Json, type Scenario } from '../support/kube/harness.js'

const suite = await startSuite(t)
const NAME = 'web-login-u-alice'

async function settledWithout(s: Scenario, kind: string): Promise<void> {
  // The controller has synced the instance a few times by now: its children other than the Pod exist.
  await s.until(NAME, (status) => status.phase === 'Pending' && status.reason === 'Starting', 'Pending / Starting')
  await new Promise((resolve) => setTimeout(resolve, 3000))
  const children = await s.children(NAME)
  t.notOk(
    children.includes(`Pod/${NAME}`),
    `no Pod while the ${kind} is not the instance's own (${children.join(', ')})`,
  )
  const pods = await s.list(`/api/v1/namespaces/${s.ns}/pods`)
  t.strictSame(
    pods.map((pod) => pod.metadata.name),
    [],
    'no pod ever ran',
  )
}

t.test(
  "a foreign Secret under the flag Secret's name: never mounted, never Running, then StartupTimeout naming it",
  async (t) => {
    const s = await suite.scenario(t, 'foreign-secret')
    const foreign = Buffer.from('flag{someone-else}').toString('base64')
    await suite.rest.call('POST', `/api/v1/namespaces/${s.ns}/secrets`, {
      body: {
        metadata: { name: `${NAME}-flag`, labels: { 'challenge-hooks.dev/definition': 'web-login' } },
        data: { flag: foreign },
      },
    })
    await s.create(s.definition('web-login'))
    await s.create(s.challenge('web-login', 'alice'))
    await settledWithout(s, 'flag Secret')
    const status = await s.status(NAME)
    t.equal(status.message, 'The instance is starting.')
    t.notOk('flagSecretRef' in status, 'the foreign Secret is not reported as the flag Secret')
    const secret = await suite.rest.get<Json>(`/api/v1/namespaces/${s.ns}/secrets/${NAME}-flag`)
    t.strictSame((secret.data as Json).flag, foreign, 'the foreign Secret is left as it was')
    t.strictSame((secret.metadata as Json).ownerReferences, undefined, 'and not adopted')

    await s.advance(300)
    const timedOut = await s.until(NAME, (st) => st.phase === 'Error', 'Error after the startup timeout')
    t.strictSame(
      { reason: timedOut.reason, message: timedOut.message },
      {
        reason: 'StartupTimeout',
        message: `The instance did not become ready within 300 seconds. Its Secret ${NAME}-flag never appeared as its own: the API server refused it, or an object of that name that this Challenge does not own is in the way.`,
      },
    )
  },
)

t.test('a NetworkPolicy the API server refuses: no pod runs unisolated, never Running', async (t) => {
  const s = await suite.scenario(t, 'refused-policy')
  // An admission policy of this test refuses the instance's -isolate policy in this namespace only.
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: `refuse-isolate-${s.ns}` },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: ['networking.k8s.io'],
            apiVersions: ['v1'],
            operations: ['CREATE', 'UPDATE'],
            resources: ['networkpolicies'],
          },
        ],
      },
      validations: [
        { expression: "!object.metadata.name.endsWith('-isolate')", message: 'this test refuses isolate policies' },
      ],
    },
  }
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: `refuse-isolate-${s.ns}` },
    spec: {
      policyName: policy.metadata.name,
      validationActions: ['Deny'],
      matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': s.ns } } },
    },
  }
  const admission = '/apis/admissionregistration.k8s.io/v1'
  await suite.rest.call('POST', `${admission}/validatingadmissionpolicies`, { body: policy })
  await suite.rest.call('POST', `${admission}/validatingadmissionpolicybindings`, { body: binding })
  t.teardown(async () => {
    await suite.rest.call('DELETE', `${admission}/validatingadmissionpolicybindings/${binding.metadata.name}`)
    await suite.rest.call('DELETE', `${admission}/validatingadmissionpolicies/${policy.metadata.name}`)
  })
  // The API server enforces a new policy within moments; wait until it does.
  await waitRefused(suite, s.ns)

  await s.create(s.definition('web-login'))
  await s.create(s.challenge('web-login', 'alice'))
  await settledWithout(s, 'isolate NetworkPolicy')
  t.ok(
    (await s.children(NAME)).includes(`Secret/${NAME}-flag`),
    'the other guard exists: only the refused policy is missing',
  )

  await s.advance(300)
  const timedOut = await s.until(NAME, (st) => st.phase === 'Error', 'Error after the startup timeout')
  t.match(timedOut, {
    reason: 'StartupTimeout',
    message: new RegExp(`Its NetworkPolicy ${NAME}-isolate never appeared as its own`),
  })
})

async function waitRefused(
  suite: { rest: { call(method: string, path: string, options: object): Promise<unknown> } },
  ns: string,
): Promise<void> {
  const probe = { metadata: { name: 'probe-isolate' }, spec: { podSelector: {}, policyTypes: ['Ingress'] } }
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      await suite.rest.call('POST', `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`, {
        body: probe,
        query: { dryRun: 'All' },
      })
    } catch {
      return
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error('the test admission policy never took effect')
}

t.test(
  'upgrade: a Deployment an earlier release made for the instance is deleted, and the instance keeps its pod',
  async (t) => {
    const s = await suite.scenario(t, 'upgrade')
    await s.create(s.definition('web-login'))
    await s.create(s.challenge('web-login', 'alice'))
    const running = await s.until(NAME, (status) => status.phase === 'Running', 'Running')
    const challenge = await s.get(NAME)
    const uid = String(challenge?.metadata.uid)
    const podPath = `/api/v1/namespaces/${s.ns}/pods/${NAME}`
    const pod = await suite.rest.get<Json>(podPath)
    // What an earlier release's Metacontroller made: a Deployment controlled by the Challenge, in its selector.
    const labels = { 'controller-uid': uid, 'challenge-hooks.dev/instance': `${NAME}-old` }
    await suite.rest.call('POST', `/apis/apps/v1/namespaces/${s.ns}/deployments`, {
      body: {
        metadata: {
          name: NAME,
          labels,
          ownerReferences: [
            {
              apiVersion: 'challenge-hooks.dev/v1alpha1',
              kind: 'Challenge',
              name: NAME,
              uid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: {
          replicas: 0,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'registry.test/app:1' }] } },
        },
      },
    })
    const gone = await eventually(
      'the old Deployment deleted',
      async () => ((await s.children(NAME)).includes(`Deployment/${NAME}`) ? undefined : true),
      async () => (await s.children(NAME)).join(', '),
      { timeoutMs: 30_000, intervalMs: 200 },
    ).catch(() => false)
    t.ok(gone, 'Metacontroller deleted it (the hook no longer answers Deployments)')
    const after = await suite.rest.get<Json>(podPath)
    t.strictSame((after.metadata as Json).uid, (pod.metadata as Json).uid, 'the pod is the same one')
    t.strictSame((await s.status(NAME)).startedAt, running.startedAt, 'and the instance is the same run, still Running')
    t.equal((await s.status(NAME)).phase, 'Running')
  },
)
