// The status the sync writes (src/challenge/status-report.ts): when the progress conditions are refreshed, and the
// deep equality that decides it.
import t from 'tap'
import { sameJson } from '../../src/challenge/status-report.js'
import { testConfig } from '../helpers/app.js'
import { ALICE, expectedInstanceId } from '../helpers/contract.js'
import { at, prepared, step } from '../helpers/drive.js'
import { challenge, readyWorld, webDefinition, type Json } from '../helpers/world.js'

t.test(
  'the progress conditions are refreshed when another condition changes, though nothing else in the status does',
  async (t) => {
    const first = prepared(challenge(), { related: [webDefinition()] })
    const ready = readyWorld(first.response.children)
    const running = step(first.parent, { related: [webDefinition()], children: ready, now: at(30) })
    // A status written with other words on Admitted (an older release's) and before Scheduled existed: the phase,
    // reason, message, times and counters are the same.
    const conditions = (running.status.conditions as Json[])
      .filter((each) => each.type !== 'Scheduled')
      .map((each) => (each.type === 'Admitted' ? { ...each, message: 'Admitted, in older words.' } : each))
    const older = { ...running.parent, status: { ...running.status, conditions } }
    const again = step(older, { related: [webDefinition()], children: ready, now: at(40) })
    const id = expectedInstanceId(testConfig().flagSecret, ALICE)
    t.strictSame(
      (again.status.conditions as Json[]).map(({ type, message }) => [type, message]),
      [
        ['Admitted', "The instance holds a slot of its owner's budget."],
        ['Scheduled', 'The pod is placed on a node.'],
        ['ContainersStarted', 'A container of the pod is running.'],
        ['WorkloadReady', 'The pod passes its readiness probes.'],
        ['EndpointReady', `http://${id}.challenges.localhost/`],
        ['Ready', 'The instance is running until 2026-11-22T12:30:30Z.'],
        ['Expired', 'The instance has not reached its end.'],
      ],
      'the Admitted words are current, and Scheduled is written with them',
    )
    t.strictSame(again.status, running.status, 'the status as the hook writes it from scratch')
  },
)

t.test('sameJson: deep equality of JSON values, key order aside, an undefined value as an absent key', async (t) => {
  const rows: [string, unknown, unknown, boolean][] = [
    ['the same number', 1, 1, true],
    ['two numbers', 1, 2, false],
    ['objects with their keys in another order', { a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 }, true],
    ['a number and an empty object', 1, {}, false],
    ['an empty object and a number', {}, 1, false],
    ['null and an empty object', null, {}, false],
    ['an empty object and null', {}, null, false],
    ['an empty object and an empty array', {}, [], false],
    ['an empty array and an empty object', [], {}, false],
    ['arrays of the same elements', [1, { a: 2 }], [1, { a: 2 }], true],
    ['arrays of one other element', [1], [2], false],
    ['arrays that differ in their second element', [1, 2], [1, 3], false],
    ['an array and a longer one that starts with it', [1], [1, 2], false],
    ['an array and the same in another order', [1, 2], [2, 1], false],
    ['a key whose value is undefined on the left: absent', { a: 1, b: undefined }, { a: 1 }, true],
    ['a key whose value is undefined on the right: absent', { a: 1 }, { a: 1, b: undefined }, true],
    ['an object with one more key on the right', { a: 1 }, { a: 1, b: 2 }, false],
    ['an object with one more key on the left', { a: 1, b: 2 }, { a: 1 }, false],
    ['one value differs', { a: 1, b: 2 }, { a: 1, b: 3 }, false],
    ['the same keys, one value null', { a: 1, b: null }, { a: 1, b: 2 }, false],
  ]
  for (const [what, a, b, expected] of rows) t.equal(sameJson(a, b), expected, what)
})
