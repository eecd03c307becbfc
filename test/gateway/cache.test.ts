// The shared list + watch of a namespace's Challenges (src/gateway/cache.ts) on the fake API server: one watch for
// every subscriber, changes fanned out by name, a watch the API server ends (watched on from the last version), an
// ERROR event (410: listed again, what changed meanwhile told), an API server away for a while, and a refusal that
// does not pass.
import t, { type Test as Tap } from 'tap'
import { gatewayCache, type CacheOptions, type ChangeType } from '../../src/gateway/cache.js'
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

async function setup(t: Tap, options: CacheOptions = {}) {
  const fake = await startFakeApiServer(t)
  const cache = gatewayCache(kubeClient(fake.kubeconfig, 2000), options)
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
  t.strictSame(cache.challenges('challenges').read('a')?.object, a)
  t.strictSame(cache.challenges('challenges').read('none'), { object: undefined })
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
    () => versionOf(cache.challenges('challenges').read('a')?.object as Json) === versionOf(later) || undefined,
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
  t.equal(cache.challenges('challenges').read('gone')?.object, undefined)
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

t.test(
  'a refusal that does not pass is told to the subscribers; the next use after a pause starts afresh',
  async (t) => {
    const { fake, cache } = await setup(t, { retryFailedMs: 0 })
    const seen = record(cache, 'a', 'finals')
    await eventually('told', () => seen.told.length === 1 || undefined)
    t.strictSame(seen.told, ['fail: cannot GET in finals'])
    const again = record(cache, 'a', 'finals')
    await eventually('told', () => again.told.length === 1 || undefined)
    t.equal(lists(fake, 'finals').length, 2)
  },
)

t.test(
  'a refusal that does not pass: said once, reads ask the API server, new subscribers are told at once',
  async (t) => {
    const failures: string[] = []
    const { fake, cache } = await setup(t, { onFailure: (path, error) => failures.push(`${path}: ${error.message}`) })
    const seen = record(cache, 'a', 'finals')
    await eventually('told', () => seen.told.length === 1 || undefined)
    const informer = cache.challenges('finals')
    t.strictSame([informer.synced, informer.read('a'), informer.select(() => true)], [false, undefined, undefined])
    const again = record(cache, 'a', 'finals')
    t.strictSame(again.told, ['fail: cannot GET in finals'], 'told at once')
    t.equal(cache.challenges('finals'), informer, 'not started again')
    t.strictSame(failures, [`${PATH.replace('challenges/challenges', 'finals/challenges')}: cannot GET in finals`])
    t.equal(lists(fake, 'finals').length, 1)
  },
)

t.test('reads: none before a list succeeded, what is held once it did', async (t) => {
  const { fake, cache } = await setup(t)
  const a = challenge(fake, 'a', { phase: 'Pending' })
  const b = challenge(fake, 'b')
  fake.failLists = true
  const informer = cache.challenges('challenges')
  t.strictSame([informer.read('a'), informer.select(() => true)], [undefined, undefined], 'not synced')
  await eventually('a refused list', () => lists(fake).length >= 1 || undefined)
  t.strictSame([informer.synced, informer.read('a')], [false, undefined])
  fake.failLists = false
  await eventually('synced', () => informer.synced || undefined)
  t.strictSame(informer.read('a'), { object: a })
  t.strictSame(informer.read('none'), { object: undefined })
  t.strictSame(
    informer.select((object) => (object.metadata as Json).name === 'b'),
    [b],
  )
})

/** A copy of `object` at resourceVersion `version`, with the status `phase`. */
const at = (object: Json, version: string, phase: string) => ({
  ...object,
  status: { phase },
  metadata: { ...(object.metadata as Json), resourceVersion: version },
})

t.test(
  "the gateway's own write is read at once; an older event does not undo it, a newer one replaces it",
  async (t) => {
    const { fake, cache } = await setup(t)
    const a = challenge(fake, 'a', { phase: 'Pending' })
    const seen = record(cache, 'a')
    t.teardown(seen.unsubscribe)
    const informer = cache.challenges('challenges')
    await eventually('a watch', () => watches(fake).length === 1 || undefined)
    const written = at(a, '900', 'Stopped')
    informer.wrote(written)
    t.strictSame([informer.read('a'), informer.select(() => true)], [{ object: written }, [written]])
    // What the watch had on the wire before the write.
    fake.watchLine(JSON.stringify({ type: 'MODIFIED', object: at(a, '899', 'Running') }))
    await eventually('told', () => seen.told.length === 2 || undefined)
    t.strictSame(seen.told[1], 'MODIFIED Running@899', 'the subscribers are told as the watch says')
    t.strictSame(informer.read('a'), { object: written }, 'the older event does not undo the write')
    const later = at(a, '1000', 'Running')
    fake.watchLine(JSON.stringify({ type: 'MODIFIED', object: later }))
    await eventually('told', () => seen.told.length === 3 || undefined)
    t.strictSame(informer.read('a'), { object: later }, 'a newer event replaces it (numerically: 1000 > 900)')
    informer.wrote(written)
    t.strictSame(informer.read('a'), { object: later }, 'an older write does not undo a newer event')
    // An older DELETED event (of an object deleted and made again) does not remove the newer one.
    fake.watchLine(JSON.stringify({ type: 'DELETED', object: at(a, '950', 'Running') }))
    await eventually('told', () => seen.told.length === 4 || undefined)
    t.strictSame(informer.read('a'), { object: later })
  },
)

t.test("the gateway's delete is read at once; an older event does not bring the object back", async (t) => {
  const { fake, cache } = await setup(t)
  const a = challenge(fake, 'a', { phase: 'Running' })
  const b = challenge(fake, 'b', { phase: 'Running' })
  const seen = record(cache, 'a')
  t.teardown(seen.unsubscribe)
  const informer = cache.challenges('challenges')
  await eventually('a watch', () => watches(fake).length === 1 || undefined)
  informer.deleted(at(a, '900', 'Running'))
  t.strictSame([informer.read('a'), informer.select(() => true)], [{ object: undefined }, [b]])
  fake.watchLine(JSON.stringify({ type: 'MODIFIED', object: at(a, '899', 'Stopped') }))
  await eventually('told', () => seen.told.length === 2 || undefined)
  t.strictSame(informer.read('a'), { object: undefined }, 'not brought back')
  // The watch's DELETED event ends what the delete held: the next event is the truth again.
  fake.watchLine(JSON.stringify({ type: 'DELETED', object: at(a, '900', 'Stopped') }))
  const again = at(a, '901', 'Pending')
  fake.watchLine(JSON.stringify({ type: 'ADDED', object: again }))
  await eventually('told', () => seen.told.length === 4 || undefined)
  t.strictSame(informer.read('a'), { object: again }, 'made again')
  // Held by finalizers: still there, as the delete answered it.
  const removing = {
    ...at(b, '1000', 'Running'),
    metadata: { ...(b.metadata as Json), resourceVersion: '1000', finalizers: ['f'], deletionTimestamp: 'x' },
  }
  informer.deleted(removing)
  t.strictSame(informer.read('b'), { object: removing })
})

t.test("a list made before the gateway's writes does not undo them; one made after ends a delete", async (t) => {
  const { fake, cache } = await setup(t)
  const a = challenge(fake, 'a')
  const seen = record(cache, 'a')
  t.teardown(seen.unsubscribe)
  const informer = cache.challenges('challenges')
  await eventually('a watch', () => watches(fake).length === 1 || undefined)
  // Versions past the fake's own (its lists are at about 101): written after the list below was made.
  const mine = { metadata: { name: 'mine', resourceVersion: '900' }, spec: {} }
  informer.wrote(mine)
  informer.deleted({ metadata: { name: 'gone', resourceVersion: '900' } })
  informer.deleted({ metadata: { name: 'early', resourceVersion: '50' } })
  fake.expireNextWatch()
  fake.endWatches()
  await eventually('listed again', () => lists(fake).length === 2 || undefined)
  await eventually('a watch', () => watches(fake).length === 3 || undefined)
  t.strictSame(informer.read('mine'), { object: mine }, 'not in the list, but written after it')
  const stale = (name: string, version: string) => ({ metadata: { name, resourceVersion: version }, spec: {} })
  fake.watchLine(JSON.stringify({ type: 'ADDED', object: stale('gone', '899') }))
  fake.watchLine(JSON.stringify({ type: 'ADDED', object: stale('early', '49') }))
  fake.watchLine(JSON.stringify({ type: 'MODIFIED', object: at(a, '1100', 'Running') }))
  await eventually('told', () => seen.told.at(-1) === 'MODIFIED Running@1100' || undefined)
  t.strictSame(informer.read('gone'), { object: undefined }, 'deleted after the list: still deleted')
  t.strictSame(informer.read('early'), { object: stale('early', '49') }, 'deleted before the list: the list ended it')
})

t.test('a version that is not an integer: the newer arrival is kept, and reads of it ask the API server', async (t) => {
  const { fake, cache } = await setup(t)
  const a = challenge(fake, 'a')
  const b = challenge(fake, 'b')
  const seen = record(cache, 'a')
  t.teardown(seen.unsubscribe)
  const informer = cache.challenges('challenges')
  await eventually('a watch', () => watches(fake).length === 1 || undefined)
  informer.wrote(at(a, 'opaque', 'Stopped'))
  t.strictSame(informer.read('a'), undefined)
  t.strictSame(
    informer.select(() => true),
    undefined,
    'a selection that holds it',
  )
  t.strictSame(
    informer.select((object) => (object.metadata as Json).name === 'b'),
    [b],
    'one that does not',
  )
  const next = at(a, '700', 'Running')
  fake.watchLine(JSON.stringify({ type: 'MODIFIED', object: next }))
  await eventually('told', () => seen.told.length === 2 || undefined)
  t.strictSame(informer.read('a'), { object: next }, 'an integer version again: read from the cache')
})

t.test("the definitions: one list + watch of the namespace's ChallengeDefinitions", async (t) => {
  const { fake, cache } = await setup(t)
  const web = fake.put('challenges', 'challengedefinitions', { metadata: { name: 'web' }, spec: { maxRenewals: 1 } })
  const informer = cache.definitions('challenges')
  const path = PATH.replace(/challenges$/, 'challengedefinitions')
  await eventually('synced', () => informer.synced || undefined)
  t.strictSame(informer.read('web'), { object: web })
  const changed = fake.put('challenges', 'challengedefinitions', {
    metadata: { name: 'web' },
    spec: { maxRenewals: 2 },
  })
  await eventually(
    'the change',
    () => versionOf(informer.read('web')?.object as Json) === versionOf(changed) || undefined,
  )
  t.strictSame(informer.read('web'), { object: changed })
  t.strictSame(
    fake.requests.filter((r) => r.startsWith(`GET ${path}`)).map((r) => r.replace(/\?.*/, '?…')),
    [`GET ${path}`, `GET ${path}?…`],
    'one list, one watch',
  )
  t.equal(cache.definitions('challenges'), informer)
})
