// Decisions that 100 % line coverage left unchecked (issue 14): each test kills a mutant that survived every suite.
import t from 'tap'
import { teardown } from '../../src/challenge/children.js'
import { Label, Reason, RUN_ANNOTATION } from '../../src/challenge/api.js'
import { podLabels } from '../../src/challenge/names.js'
import { indexObjects } from '../../src/challenge/observed.js'
import { currentPods, podProblem } from '../../src/challenge/workload.js'
import type { KubeObject } from '../../src/protocol.js'
import { NAMESPACE, names, object } from './objects.js'

function waitingPod(name: string, ...reasons: string[]): KubeObject {
  return object('Pod', name, {
    status: {
      containerStatuses: reasons.map((reason, i) => ({ name: `c${i}`, restartCount: 0, state: { waiting: { reason } } })),
    },
  })
}

t.test('a fatal pod problem outranks an image pull, whatever the order of the pods', async (t) => {
  const pulling = waitingPod('a', 'ImagePullBackOff')
  const invalid = waitingPod('b', 'InvalidImageName')
  for (const pods of [
    [pulling, invalid],
    [invalid, pulling],
  ]) {
    const problem = podProblem(pods)
    t.equal(problem?.reason, Reason.InvalidImage)
    t.equal(problem?.fatal, true)
  }
})

t.test('an image pull outranks an unschedulable pod', async (t) => {
  const unschedulable = object('Pod', 'u', {
    status: { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] },
  })
  const problem = podProblem([unschedulable, waitingPod('p', 'ErrImagePull')])
  t.equal(problem?.reason, Reason.ImagePullBackOff)
  t.equal(problem?.fatal, false)
})

t.test('an invalid image name ends the run: fatal, with the container named', async (t) => {
  t.same(podProblem([waitingPod('a', 'InvalidImageName')]), {
    fatal: true,
    reason: 'InvalidImage',
    message: 'The image of container c0 is not a valid image name.',
  })
})

t.test('terminating pods of the current run are not current pods, so their problems do not count', async (t) => {
  const pod = (name: string, deleting: boolean): KubeObject =>
    object('Pod', name, {
      metadata: {
        name,
        namespace: NAMESPACE,
        labels: podLabels(names),
        annotations: { [RUN_ANNOTATION]: '2' },
        ...(deleting ? { deletionTimestamp: '2099-01-01T00:00:00Z' } : {}),
      },
    })
  const related = indexObjects({ 'Pod.v1': { live: pod('live', false), dying: pod('dying', true) } }, NAMESPACE)
  t.same(
    currentPods(related, podLabels(names), 2).map((p) => p.metadata.name),
    ['live'],
  )
})

t.test('teardown keeps the policies and the flag Secret while the Deployment is still observed', async (t) => {
  const children = indexObjects(
    {
      'Deployment.apps/v1': { [names.base]: object('Deployment', names.base, { apiVersion: 'apps/v1', metadata: { name: names.base, namespace: NAMESPACE, deletionTimestamp: '2099-01-01T00:00:00Z' } }) },
      'NetworkPolicy.networking.k8s.io/v1': { [names.isolatePolicy]: object('NetworkPolicy', names.isolatePolicy) },
      'Secret.v1': { [names.flagSecret]: object('Secret', names.flagSecret) },
    },
    NAMESPACE,
  )
  const kept = teardown(children, new Map(), names)
  t.same(kept.map((child) => `${child.kind}/${child.metadata.name}`).sort(), [
    `NetworkPolicy/${names.isolatePolicy}`,
    `Secret/${names.flagSecret}`,
  ])
})
