// Decisions that 100 % line coverage left unchecked: each test kills a mutant that survived every suite.
import t from 'tap'
import { Reason } from '../../src/contract/api.js'
import { indexObjects } from '../../src/challenge/observed.js'
import { teardown } from '../../src/challenge/teardown.js'
import { podProblem } from '../../src/challenge/workload.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { NAMESPACE, names, object } from './objects.js'

/** A pod whose containers wait for these reasons, in this order. */
function waitingPod(...reasons: string[]): KubeObject {
  return object('Pod', names.base, {
    status: {
      containerStatuses: reasons.map((reason, i) => ({
        name: `c${i}`,
        restartCount: 0,
        state: { waiting: { reason } },
      })),
    },
  })
}

t.test('a fatal container problem outranks an image pull, whatever the order of the containers', async (t) => {
  for (const pod of [
    waitingPod('ImagePullBackOff', 'InvalidImageName'),
    waitingPod('InvalidImageName', 'ImagePullBackOff'),
  ]) {
    const problem = podProblem(pod)
    t.equal(problem?.reason, Reason.InvalidImage)
    t.equal(problem?.fatal, true)
  }
})

t.test('an image pull outranks an unschedulable pod', async (t) => {
  const pod = object('Pod', names.base, {
    status: {
      conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }],
      containerStatuses: [{ name: 'c0', state: { waiting: { reason: 'ErrImagePull' } } }],
    },
  })
  const problem = podProblem(pod)
  t.equal(problem?.reason, Reason.ImagePullBackOff)
  t.equal(problem?.fatal, false)
})

t.test('an invalid image name ends the run: fatal, with the container named', async (t) => {
  t.strictSame(podProblem(waitingPod('InvalidImageName')), {
    fatal: true,
    reason: 'InvalidImage',
    message: 'The image of container c0 is not a valid image name.',
  })
})

t.test('teardown keeps the policies and the flag Secret while a pod or a Deployment is still observed', async (t) => {
  const guards = {
    'NetworkPolicy.networking.k8s.io/v1': { [names.isolatePolicy]: object('NetworkPolicy', names.isolatePolicy) },
    'Secret.v1': { [names.flagSecret]: object('Secret', names.flagSecret) },
  }
  const leaving = (kind: string, apiVersion: string) => ({
    [`${kind}.${apiVersion}`]: {
      [names.base]: object(kind, names.base, {
        apiVersion,
        metadata: { name: names.base, namespace: NAMESPACE, deletionTimestamp: '2099-01-01T00:00:00Z' },
      }),
    },
  })
  for (const [kind, apiVersion] of [
    ['Deployment', 'apps/v1'],
    ['Pod', 'v1'],
  ] as const) {
    const kept = teardown(indexObjects({ ...leaving(kind, apiVersion), ...guards }, NAMESPACE))
    t.strictSame(
      kept.map((child) => `${child.kind}/${child.metadata.name}`).sort(),
      [`NetworkPolicy/${names.isolatePolicy}`, `Secret/${names.flagSecret}`],
      `a ${kind} being deleted`,
    )
  }
  t.strictSame(teardown(indexObjects(guards, NAMESPACE)), [], 'nothing left to wait for: the guards go too')
})
