// bench:rush's settle rule (bench/rush/settle.ts): from when on the hook calls stayed at the instances' own resync
// rate over a whole resync period. The samples are written here by hand, one every 5 s.
import t from 'tap'
import { settledSince, settleLimit, type CallSample } from '../../bench/rush/settle.js'

/** Samples every 5 s from 0 to `seconds`, the calls so far given by `callsAt(second)`. */
function samples(seconds: number, callsAt: (second: number) => number): CallSample[] {
  const out: CallSample[] = []
  for (let second = 0; second <= seconds; second += 5) out.push({ time: second * 1000, calls: callsAt(second) })
  return out
}

t.test('the limit: rate x one resync per instance per resync period, over the window', async (t) => {
  t.equal(settleLimit({ rate: 1.2, windowSeconds: 300 }, 2000, 300), 2400)
  t.equal(settleLimit({ rate: 1.2, windowSeconds: 240 }, 2000, 300), 1920)
  t.equal(settleLimit({ rate: 1.5, windowSeconds: 120 }, 7, 300), 5, 'rounded up')
})

t.test('a window is judged only once it is whole', async (t) => {
  t.equal(settledSince([], 300, 10, 5000), undefined, 'no sample yet')
  t.equal(
    settledSince(
      samples(290, () => 0),
      300,
      10,
      5000,
    ),
    undefined,
    '290 s of 300 seen: not yet',
  )
  t.equal(
    settledSince(
      samples(295, () => 0),
      300,
      10,
      5000,
    ),
    0,
    '295 s: whole within the sampling period',
  )
})

t.test('the start of the first window within the limit', async (t) => {
  // 2,000 instances: a backlog of 3,000 calls in the first minute, then the instances' own resyncs, all 2,000 of
  // them bunched between 180 and 240 s (they started together), then nothing.
  const callsAt = (second: number) => Math.min(second, 60) * 50 + Math.max(0, Math.min(second, 240) - 180) * (2000 / 60)
  const limit = settleLimit({ rate: 1.2, windowSeconds: 300 }, 2000, 300)
  const seen = samples(600, callsAt)
  const accepted = (window: number, most: number) => {
    const index = seen.findIndex((_, i) => settledSince(seen.slice(0, i + 1), window, most, 5000) !== undefined)
    return { end: seen[index]?.time, from: settledSince(seen.slice(0, index + 1), window, most, 5000) }
  }
  // [55, 355] holds 5,000 - 2,750 = 2,250 calls (≤ 2,400); [50, 350] holds 2,500.
  t.strictSame(
    accepted(300, limit),
    { end: 355_000, from: 55_000 },
    "settled from 55 s: the backlog's last 250 calls and the 2,000 bunched resyncs, one per instance",
  )
  // The rule before: 1.2x over 240 s (1,920 calls), read at the window's end. [185, 425] holds
  // 5,000 - 3,166.7 calls; every earlier window holds the bunched resyncs and more.
  t.strictSame(
    accepted(240, settleLimit({ rate: 1.2, windowSeconds: 240 }, 2000, 300)),
    { end: 425_000, from: 185_000 },
    'a 240-s window reads the bunched resyncs as a backlog: at its end, 425 s',
  )
})
