// Pods Kubernetes will not create (admission, LimitRange, a full quota), as the Deployment reports them.
import t from 'tap'
import { at, prepared, step } from '../helpers/drive.js'
import { challenge, observedChildren, waitingPod, webDefinition, type Json } from '../helpers/world.js'

const NAME = 'web-login-u-alice'
const LIMIT_RANGE = 'pods "web-login-u-alice-5d8c9-x7k2p" is forbidden: maximum memory usage per Container is 2Gi, but limit is 3Gi'
const QUOTA = 'pods "web-login-u-alice-5d8c9-x7k2p" is forbidden: exceeded quota: challenges, requested: pods=1, used: pods=300, limited: pods=300'

/** The first answer's children as observed, the Deployment of `run` reporting ReplicaFailure with `message`. */
function refused(children: readonly Json[], message: string, run = 0, status = 'True') {
  return observedChildren(children, (child) => {
    if (child.kind !== 'Deployment') return {}
    const template = ((child.spec as Json).template as { metadata: { annotations: Record<string, string> } }).metadata
    template.annotations['challenge-hooks.dev/run'] = String(run)
    return { status: { observedGeneration: 1, replicas: 0, conditions: [{ type: 'ReplicaFailure', status, reason: 'FailedCreate', message }] } }
  })
}

t.test('a pod refused for good (Pod Security, a LimitRange) ends the run at once: Error / PodRefused with the reason', async (t) => {
  const first = prepared(challenge(), { related: [webDefinition()] })
  const failed = step(first.parent, { related: [webDefinition()], children: refused(first.response.children, LIMIT_RANGE), now: at(5) })
  t.match(failed.status, {
    phase: 'Error',
    reason: 'PodRefused',
    message: `Kubernetes refused the instance's pod: ${LIMIT_RANGE}`,
    finishedAt: '2026-11-22T12:00:05Z',
  })
  t.same(failed.response.children.filter((child) => child.kind === 'Service' || child.kind === 'Ingress'), [], 'the teardown starts: traffic path first')
  const later = step(failed.parent, { related: [webDefinition()], children: [], now: at(60) })
  t.match(later.status, { phase: 'Error', reason: 'PodRefused' }, 'sticky until a restart')
  t.same(later.response.children, [], 'nothing is held once the teardown is over: no budget either')
})

t.test('a full quota waits: Pending / PodRefused, then a StartupTimeout that says why', async (t) => {
  const first = prepared(challenge(), { related: [webDefinition()] })
  const waiting = step(first.parent, { related: [webDefinition()], children: refused(first.response.children, QUOTA), now: at(5) })
  t.match(waiting.status, { phase: 'Pending', reason: 'PodRefused', message: `The namespace's quota is full; waiting for room (${QUOTA}).` })
  t.equal(waiting.response.children.length, 6, 'keeps every child: the ReplicaSet retries')
  const timedOut = step(waiting.parent, { related: [webDefinition()], children: refused(first.response.children, QUOTA), now: at(300) })
  t.match(timedOut.status, { phase: 'Error', reason: 'StartupTimeout', message: `The instance did not become ready within 300 seconds. The namespace's quota is full; waiting for room (${QUOTA}).` })
})

t.test('what does not count as a refusal of this run', async (t) => {
  const first = prepared(challenge(), { related: [webDefinition()] })
  const cases: [string, ReturnType<typeof refused>][] = [
    ['a cleared condition', refused(first.response.children, LIMIT_RANGE, 0, 'False')],
    ['the Deployment of another run', refused(first.response.children, LIMIT_RANGE, 7)],
  ]
  for (const [what, children] of cases) {
    t.match(step(first.parent, { related: [webDefinition()], children, now: at(5) }).status, { phase: 'Pending', reason: 'Starting' }, what)
  }
  // A pod of the run is the better witness: its own problem wins over the Deployment's report.
  const withPod = step(first.parent, {
    related: [webDefinition(), waitingPod(NAME, 0, 'ImagePullBackOff')],
    children: refused(first.response.children, QUOTA),
    now: at(5),
  })
  t.match(withPod.status, { phase: 'Pending', reason: 'ImagePullBackOff' })
  const long = `pods "x" is forbidden: ${'violates PodSecurity '.repeat(40)}`
  const cut = step(first.parent, { related: [webDefinition()], children: refused(first.response.children, long), now: at(5) })
  t.equal(String(cut.status.message).length, "Kubernetes refused the instance's pod: ".length + 300, 'a long refusal is cut to 300 characters')
  t.match(cut.status.message, /…$/)
  const bare = refused(first.response.children, '').map((child) => {
    if (child.kind !== 'Deployment') return child
    return { ...child, status: { conditions: [{ type: 'ReplicaFailure', status: 'True' }] } }
  })
  t.match(step(first.parent, { related: [webDefinition()], children: bare, now: at(5) }).status, { phase: 'Error', message: "Kubernetes refused the instance's pod: no reason given" })
})
