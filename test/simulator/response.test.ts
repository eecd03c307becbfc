import t from 'tap'
import { CrashError, decodeCustomizeAnswer, decodeSyncAnswer } from '../support/simulator/response.js'

t.test('sync answers', async (t) => {
  const child = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } }
  t.strictSame(
    decodeSyncAnswer(
      { status: { phase: 'Running' }, children: [child], resyncAfterSeconds: 2.5, finalized: false },
      true,
    ),
    {
      answer: { status: { phase: 'Running' }, children: [child], resyncAfterSeconds: 2.5, finalized: false },
      ignoredFields: [],
    },
  )
  const empty = { answer: { status: null, children: null, resyncAfterSeconds: 0, finalized: false }, ignoredFields: [] }
  t.strictSame(decodeSyncAnswer({}, true), empty, 'missing children: null, which deletes every child')
  t.strictSame(decodeSyncAnswer(null, true), empty, 'a JSON null body decodes to nothing at all')
  t.strictSame(
    decodeSyncAnswer({ status: null, children: null, resyncAfterSeconds: null, finalized: null }, true),
    empty,
  )

  t.strictSame(
    decodeSyncAnswer({ Children: [child], status: {} }, false).ignoredFields,
    ['Children'],
    'field names are case-sensitive',
  )
  t.throws(() => decodeSyncAnswer({ Children: [], extra: 1 }, true), {
    message: 'strict validation failed: unknown field "Children", unknown field "extra"',
  })
})

t.test('sync answers with the wrong types', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [[], /cannot unmarshal array into the response of type object/],
    ['x', /cannot unmarshal string into the response/],
    [{ status: [] }, /cannot unmarshal array into field status of type object/],
    [{ children: {} }, /cannot unmarshal object into field children of type array/],
    [{ resyncAfterSeconds: '5' }, /cannot unmarshal string into field resyncAfterSeconds of type number/],
    [{ finalized: 'true' }, /field finalized of type boolean/],
    [{ children: ['x'] }, /cannot unmarshal string into children\[0\]/],
    [{ children: [{ apiVersion: 'v1', metadata: { name: 'a' } }] }, /Object 'Kind' is missing/],
    [{ children: [{ kind: '' }] }, /Object 'Kind' is missing/],
  ]
  for (const [body, message] of cases) t.throws(() => decodeSyncAnswer(body, false), { message }, JSON.stringify(body))
  t.throws(() => decodeSyncAnswer({ children: [null] }, false), CrashError)
  t.throws(
    () => decodeSyncAnswer({ children: [null, { kind: 5 }] }, false),
    { message: /Kind/ },
    'a decode error comes before the crash',
  )
})

t.test('customize answers', async (t) => {
  const rule = {
    apiVersion: 'v1',
    resource: 'pods',
    labelSelector: { matchLabels: { a: 'b' }, matchExpressions: [{ key: 'k', operator: 'In', values: ['v'] }] },
    namespace: 'ns',
    names: null,
  }
  t.strictSame(decodeCustomizeAnswer({ relatedResources: [rule] }, true), { answer: [rule], ignoredFields: [] })
  t.strictSame(decodeCustomizeAnswer({}, true).answer, [])
  t.strictSame(decodeCustomizeAnswer(null, true).answer, [])
  t.strictSame(
    decodeCustomizeAnswer({ relatedResources: [{ ...rule, labelSelector: { matchLabel: {} } }] }, false).ignoredFields,
    ['relatedResources[0].labelSelector.matchLabel'],
  )
  t.throws(() => decodeCustomizeAnswer({ relatedResources: [{ ...rule, Namespace: 'x' }] }, true), {
    message: /unknown field "relatedResources\[0\].Namespace"/,
  })
  t.throws(
    () => decodeCustomizeAnswer({ relatedResources: [{ ...rule, labelSelector: { matchLabels: { a: 1 } } }] }, false),
    { message: /field relatedResources\[0\].labelSelector.matchLabels.a of type string/ },
  )
  t.throws(() => decodeCustomizeAnswer({ relatedResources: [null] }, false), CrashError)
})
