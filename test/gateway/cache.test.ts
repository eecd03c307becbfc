// The shared list + watch of a namespace's Challenges (src/gateway/cache.ts) on the fake API server: one watch for
// every subscriber, changes fanned out by name, a watch the API server ends (watched on from the last version), an
// ERROR event (410: listed again, what changed meanwhile told), an API server away for a while, and a refusal that
// does not pass.
import t, { type Test as Tap } from 'tap'
import { gatewayCache, type ChangeType } from '../../src/gateway/cache.js'
import { kubeClient } from '../../src/gateway/kube.js'
import { eventually } from '../support/eventually.js'
import { startFakeApiServer, type FakeApiServer, type Json } from './fake-apiserver.js'

const PATH = '/apis/challenge-hooks.dev/v1alpha1/namespaces/challenges/challenges'

const challenge = (fake: FakeApiServer, name: string, status?: Json, namespace = 'challenges') =>
  fake.put(namespace, 'challenges', { metadata: { name }, spec: {}, ...(status === undefined ? {} : { status }) })

const versionOf = (object: Json) => (object.metadata as Json).resourceVersion as string
const watches = (fake: FakeApiServer, namespace = 'challenges') =>
  fake.requests.filter(
    (r) =>
      r.startsWith(`GET ${PATH.replace('challenges/challenges', `${namespace}/challenges`)}?`) &&
      r.includes('watch=true'),
  )
const lists = (fake: FakeApiServer, namespace = 'challenges') =>
  fake.requests.filter((r) => r === `GET ${PATH.replace('challenges/challenges', `${namespace}/challenges`)}`)

async function setup(t: Tap) {
  const fake = await startFakeApiServer(t)
  const cache = gatewayCache(kubeClient(fake.kubeconfig, 2000))
  t.teardown(() => cache.stop())
  return { fake, cache }
}

/** What a subscriber of `name` was told: `TYPE status-phase@version`, or `fail: message`. */
function record(cache: ReturnType<typeof gatewayCache>, name: string, namespace = 'challenges') {
  const told: string[] = []
  const unsubscribe = cache.challenges(namespace).subscribe(name, {
    change: (type: ChangeType, object: Json) =>
      told.push(`${type} ${String((object.status as Json | undefined)?.phase)}@${versionOf(object)}`),
    fail: (error) => told.push(`fail: ${error.message}`),
  })
  return { told, unsubscribe }
}

t.test('one watch for every subscriber; each told of its own object only', async (t) => {
  const { fake, cache } = await setup(t)
  const a = challenge(fake, 'a', { phase: 'Pending' })
  challenge(fake, 'b')
  const first = record(cache, 'a')
  const second = record(cache, 'a')
  const other = record(cache, 'b')
  await eventually('synced', () => cache.challenges('challenges').synced || undefined)
  await eventually('a watch', () => watches(fake).length === 1 || undefined)
  t.strictSame(cache.challenges('challenges').get('a'), a)
  t.equal(cache.challenges('challenges').get('none'), undefined)
  const running = fake.setStatus('challenges', 'a', { phase: 'Running' })
  challenge(fake, 'c')
  await eventually('Running', () => first.told.length === 2 || undefined)
  await eventually('Running', () => second.told.length === 2 || undefined)
  t.strictSame(first.told, [`ADDED Pending@${versionOf(a)}`, `MODIFIED Running@${versionOf(running)}`])
  t.strictSame(second.told, first.told)
  t.strictSame(other.told, [`ADDED undefined@${String(Number(versionOf(a)) + 1)}`])
  second.unsubscribe()
  first.unsubscribe()
  other.unsubscribe()
  const later = fake.setStatus('challenges', 'a', { phase: 'Stopped' })
  await eventually(
    'the change seen',
    () => versionOf(cache.challenges('challenges').get('a') as Json) === versionOf(later) || undefined,
  )
  t.equal(first.told.length, 2, 'nothing told after unsubscribing')
  t.equal(watches(fake).length, 1)
  t.equal(lists(fake).length, 1)
})

t.test('a watch the API server ends is watched on from the last version; bookmarks move it', async (t) => {
  const { fake, cache } = await setup(t)
  challenge(fake, 'a')
  const seen = record(cache, 'a')
  t.teardown(seen.unsubscribe)
  await eventually('a watch', () => watches(fake).length === 1 || undefined)
  // From the list's version (the fake's: that of its last write).
  t.match(watches(fake)[0], `resourceVersion=${versionOf(fake.objects.get('challenges/challenges/a') as Json)}&`)
  const pending = fake.setStatus('challenges', 'a', { phase: 'Pending' })
  await eventually('Pending', () => seen.told.length === 2 || undefined)
  fake.endWatches()
  await eventually('a second watch', () => watches(fake).length === 2 || undefined)
  t.match(watches(fake)[1], `resourceVersion=${versionOf(pending)}&`)
  fake.watchLine(
    JSON.stringify({ type: 'BOOKMARK', object: { kind: 'Challenge', metadata: { resourceVersion: '990' } } }),
  )
  fake.watchLine('not json')
  const running = fake.setStatus('challenges', 'a', { phase: 'Running' })
  await eventually('Running', () => seen.told.length === 3 || undefined)
  fake.watchLine(
    JSON.stringify({ type: 'BOOKMARK', object: { kind: 'Challenge', metadata: { resourceVersion: '995' } } }),
  )
  await eventually('the bookmark read', async () => {
    fake.endWatches()
    return watches(fake).some((r) => r.includes('resourceVersion=995&')) || undefined
  })
  t.strictSame(seen.told.slice(1), [`MODIFIED Pending@${versionOf(pending)}`, `MODIFIED Running@${versionOf(running)}`])
  t.equal(lists(fake).length, 1, 'no list again')
})

t.test('an ERROR event (410): the rest of that watch is not believed; a list tells what changed', async (t) => {
  const { fake, cache } = await setup(t)
  const a = challenge(fake, 'a')
  challenge(fake, 'gone')
  const seenA = record(cache, 'a')
  const seenGone = record(cache, 'gone')
  const seenNew = record(cache, 'new')
  await eventually('a watch', () => watches(fake).length === 1 || undefined)
  fake.watchLine(JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } }))
  fake.watchLine(
    JSON.stringify({
      type: 'MODIFIED',
      object: { ...a, status: { phase: 'Bogus' }, metadata: { ...(a.metadata as Json), resourceVersion: '999' } },
    }),
  )
  // Meanwhile, unseen by any watch: one changed, one gone, one new (as after a compaction).
  const stored = { ...a, status: { phase: 'Running' }, metadata: { ...(a.metadata as Json), resourceVersion: '500' } }
  fake.objects.set('challenges/challenges/a', stored)
  const gone = fake.objects.get('challenges/challenges/gone') as Json
  fake.objects.delete('challenges/challenges/gone')
  fake.objects.set('challenges/challenges/new', { metadata: { name: 'new', resourceVersion: '501' } })
  fake.endWatches()
  await eventually('listed again', () => lists(fake).length === 2 || undefined)
  await eventually('told', () => seenNew.told.length === 1 || undefined)
  t.strictSame(seenA.told, [`ADDED undefined@${versionOf(a)}`, 'MODIFIED Running@500'])
  t.strictSame(seenGone.told, [`ADDED undefined@${versionOf(gone)}`, `DELETED undefined@${versionOf(gone)}`])
  t.strictSame(seenNew.told, ['ADDED undefined@501'])
  t.equal(cache.challenges('challenges').get('gone'), undefined)
})

t.test('an API server away: not synced, tried again; back: listed again and synced', async (t) => {
  const { fake, cache } = await setup(t)
  challenge(fake, 'a')
  fake.mode = 'down'
  const seen = record(cache, 'a')
  t.teardown(seen.unsubscribe)
  await eventually('three refused lists', () => lists(fake).length >= 3 || undefined)
  t.equal(cache.challenges('challenges').synced, false)
  fake.mode = 'up'
  await eventually('synced', () => cache.challenges('challenges').synced || undefined)
  await eventually('a watch', () => watches(fake).length === 1 || undefined)
  fake.mode = 'dead'
  fake.endWatches()
  await eventually('not synced', () => !cache.challenges('challenges').synced || undefined)
  const running = fake.setStatus('challenges', 'a', { phase: 'Running' })
  fake.mode = 'up'
  await eventually('Running', () => seen.told.length === 2 || undefined)
  t.strictSame(seen.told.at(-1), `MODIFIED Running@${versionOf(running)}`)
  t.equal(cache.challenges('challenges').synced, true)
  // Stopped while waiting to try again: no more calls.
  fake.mode = 'down'
  fake.endWatches()
  await eventually('refused', () => !cache.challenges('challenges').synced || undefined)
  cache.stop()
  const calls = fake.requests.length
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(fake.requests.length, calls)
})

t.test('a refusal that does not pass is told to the subscribers; the next use starts afresh', async (t) => {
  const { fake, cache } = await setup(t)
  const seen = record(cache, 'a', 'finals')
  await eventually('told', () => seen.told.length === 1 || undefined)
  t.strictSame(seen.told, ['fail: cannot GET in finals'])
  const again = record(cache, 'a', 'finals')
  await eventually('told', () => again.told.length === 1 || undefined)
  t.equal(lists(fake, 'finals').length, 2)
})
