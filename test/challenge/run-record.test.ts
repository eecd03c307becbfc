// What a run's Service records of it (docs/api.md, Children, "The Service records the run's instants"): read only
// from the Challenge's own Service of that run, and only what is whole.
import t from 'tap'
import type { KubeObject } from '../../src/contract/protocol.js'
import { indexObjects } from '../../src/challenge/observed.js'
import { childNames } from '../../src/challenge/names.js'
import { runRecord } from '../../src/challenge/run-record.js'
import { controllerRef, NAMESPACE, UID } from '../helpers/world.js'

const names = childNames('web-login-u-alice', UID)
const ADMITTED = '2026-11-22T12:00:00Z'
const SINCE = '2026-11-22T12:00:03Z'
const NOTHING = { admittedAt: undefined, claim: undefined, coldSince: undefined }

function service(annotations: Record<string, string>, metadata: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: names.base,
      namespace: NAMESPACE,
      annotations: { 'challenge-hooks.dev/run': '0', 'challenge-hooks.dev/admitted-at': ADMITTED, ...annotations },
      ownerReferences: [controllerRef(UID)],
      ...metadata,
    },
  } as KubeObject
}

const read = (object: KubeObject | undefined, run = 0) =>
  runRecord(
    indexObjects(object === undefined ? {} : { 'Service.v1': { [names.base]: object } }, NAMESPACE),
    names,
    UID,
    run,
  )

t.test('the admission, a claim and a cold run, as the Service records them', async (t) => {
  t.strictSame(read(service({})), { ...NOTHING, admittedAt: Date.parse(ADMITTED) })
  const claimed = { 'challenge-hooks.dev/pool-state': 'Claimed', 'challenge-hooks.dev/pool-pod': 'web-login.pool-4' }
  t.strictSame(read(service({ ...claimed, 'challenge-hooks.dev/pool-since': SINCE })), {
    ...NOTHING,
    admittedAt: Date.parse(ADMITTED),
    claim: { pod: 'web-login.pool-4', since: Date.parse(SINCE) },
  })
  t.strictSame(read(service({ 'challenge-hooks.dev/pool-state': 'Cold', 'challenge-hooks.dev/pool-since': SINCE })), {
    ...NOTHING,
    admittedAt: Date.parse(ADMITTED),
    coldSince: Date.parse(SINCE),
  })
})

t.test('a claim needs its state, its pod and its time; a wait records no claim', async (t) => {
  const admitted = { ...NOTHING, admittedAt: Date.parse(ADMITTED) }
  const whole = {
    'challenge-hooks.dev/pool-state': 'Claimed',
    'challenge-hooks.dev/pool-pod': 'web-login.pool-4',
    'challenge-hooks.dev/pool-since': SINCE,
  }
  const without = (key: string) => Object.fromEntries(Object.entries(whole).filter(([name]) => name !== key))
  t.strictSame(read(service(without('challenge-hooks.dev/pool-pod'))), admitted, 'no pod')
  t.strictSame(read(service(without('challenge-hooks.dev/pool-since'))), admitted, 'no time')
  t.strictSame(read(service({ ...whole, 'challenge-hooks.dev/pool-since': 'soon' })), admitted, 'no readable time')
  t.strictSame(read(service({ ...whole, 'challenge-hooks.dev/pool-state': 'Waiting' })), admitted, 'waiting')
  t.strictSame(read(service(without('challenge-hooks.dev/pool-state'))), admitted, 'no state')
  t.strictSame(
    read(service({ 'challenge-hooks.dev/pool-state': 'Cold' })),
    admitted,
    'cold without a time: no record of when',
  )
})

t.test('nothing from another run’s Service, one on its way out, one not its own, or none', async (t) => {
  t.strictSame(read(service({}), 1), NOTHING, 'another run')
  t.strictSame(read(service({ 'challenge-hooks.dev/run': '1' }), 1), { ...NOTHING, admittedAt: Date.parse(ADMITTED) })
  t.strictSame(read(service({}, { deletionTimestamp: '2026-11-22T12:00:05Z' })), NOTHING, 'being deleted')
  t.strictSame(read(service({}, { ownerReferences: [controllerRef('another-uid')] })), NOTHING, 'not its own')
  t.strictSame(read(undefined), NOTHING, 'no Service')
  const unannotated = service({})
  delete unannotated.metadata.annotations
  t.strictSame(read(unannotated), NOTHING, 'made by an earlier release')
})
