import t from 'tap'
import { WorkQueue } from '../support/simulator/queue.js'

t.test('a key is queued once, in order', async (t) => {
  const queue = new WorkQueue()
  queue.add('a')
  queue.add('b')
  queue.add('a')
  t.strictSame(queue.ready(), ['a', 'b'])
  queue.remove('a')
  queue.remove('missing')
  t.equal(queue.take(), 'b')
  t.equal(queue.take(), undefined)
})

t.test('delayed adds: the earliest time wins; due ones are promoted in time order', async (t) => {
  const queue = new WorkQueue()
  queue.addAt('a', 5000, 0)
  queue.addAt('a', 9000, 0)
  t.equal(queue.dueAt('a'), 5000)
  queue.addAt('a', 3000, 0)
  t.equal(queue.dueAt('a'), 3000)
  queue.addAt('b', 1000, 0)
  t.equal(queue.nextDue(), 1000)
  queue.addAt('now', 0, 0)
  t.strictSame(queue.ready(), ['now'], 'not after now: queued at once')
  queue.promote(2000)
  t.strictSame(queue.ready(), ['now', 'b'])
  queue.promote(10_000)
  t.strictSame(queue.ready(), ['now', 'b', 'a'])
  t.equal(queue.nextDue(), undefined)
  t.equal(queue.dueAt('a'), undefined)
})

t.test('failures back off exponentially from 5 ms to 1000 s; success resets', async (t) => {
  const queue = new WorkQueue()
  const delays: number[] = []
  for (let i = 0; i < 20; i++) {
    queue.addRateLimited('k', 0)
    delays.push(queue.dueAt('k') as number)
    queue.promote(Number.MAX_SAFE_INTEGER)
    queue.take()
  }
  t.strictSame(delays.slice(0, 4), [5, 10, 20, 40])
  t.equal(delays.at(-1), 1_000_000)
  queue.forget('k')
  queue.addRateLimited('k', 0)
  t.equal(queue.dueAt('k'), 5)
})
