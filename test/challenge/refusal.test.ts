// A pod Kubernetes will not create (admission: Pod Security, a LimitRange, a full quota). The Pod is the hook's own
// child, so the refusal reaches Metacontroller (a sync error on the Challenge, retried), not the hook: the hook sees
// no pod, keeps the instance Pending, and its StartupTimeout says where to look.
import t from 'tap'
import { at, prepared, step } from '../helpers/drive.js'
import { challenge, observedChildren, webDefinition } from '../helpers/world.js'

t.test(
  'a pod that never appears: Pending / Starting, then a StartupTimeout that names the likely causes',
  async (t) => {
    const first = prepared(challenge(), { related: [webDefinition()] })
    const withoutPod = observedChildren(first.response.children).filter((child) => child.kind !== 'Pod')
    const waiting = step(first.parent, { related: [webDefinition()], children: withoutPod, now: at(60) })
    t.hasStrict(waiting.status, { phase: 'Pending', reason: 'Starting', message: 'The instance is starting.' })
    t.ok(
      waiting.response.children.some((child) => child.kind === 'Pod'),
      'the Pod is asked for again',
    )
    const timedOut = step(waiting.parent, { related: [webDefinition()], children: withoutPod, now: at(300) })
    t.strictSame(
      [timedOut.status.phase, timedOut.status.reason, timedOut.status.message],
      [
        'Error',
        'StartupTimeout',
        "The instance did not become ready within 300 seconds. Its pod was never created: the API server refused it (a quota, Pod Security, a LimitRange; the Challenge's events say which) or it is still being replaced.",
      ],
    )
  },
)

t.test('an Error / PodRefused written by an earlier release stays the run-ending error it was', async (t) => {
  const ended = challenge({
    status: {
      phase: 'Error',
      reason: 'PodRefused',
      message: "Kubernetes refused the instance's pod: forbidden.",
      finishedAt: '2026-11-22T11:59:00Z',
      run: 0,
    },
  })
  const answer = step(ended, { related: [webDefinition()], now: at(10) })
  t.hasStrict(answer.status, { phase: 'Error', reason: 'PodRefused', finishedAt: '2026-11-22T11:59:00Z' })
  t.strictSame(answer.response.children, [], 'no workload until a restart')
})
