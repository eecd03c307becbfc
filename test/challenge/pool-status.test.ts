// A definition's status.pool (src/challenge/pool-status.ts): its message within the CRD's bound of 1024 characters.
import t from 'tap'
import { poolStatus } from '../../src/challenge/pool-status.js'

const AT = Date.parse('2026-11-29T10:00:00Z')
const counts = { free: 0, claimed: 0, starting: 0 }

t.test('a message of exactly 1024 characters is written whole', async (t) => {
  const message = 'x'.repeat(1024)
  t.strictSame(poolStatus(undefined, { state: 'Off', message, size: 2, counts }, AT), {
    pool: { state: 'Off', message, size: 2, free: 0, claimed: 0, starting: 0, since: '2026-11-29T10:00:00Z' },
  })
})

t.test('a longer message is cut to 1023 characters and an ellipsis', async (t) => {
  t.strictSame(poolStatus(undefined, { state: 'Off', message: 'y'.repeat(1025), size: 2, counts }, AT), {
    pool: {
      state: 'Off',
      message: `${'y'.repeat(1023)}…`,
      size: 2,
      free: 0,
      claimed: 0,
      starting: 0,
      since: '2026-11-29T10:00:00Z',
    },
  })
})

t.test('a message cut where a flag emoji would be split loses the emoji whole, never half of it', async (t) => {
  const message = `${'z'.repeat(1022)}🚩 and more`
  const pool = poolStatus(undefined, { state: 'Off', message, size: 2, counts }, AT).pool as { message: string }
  t.equal(pool.message, `${'z'.repeat(1022)}…`)
})
