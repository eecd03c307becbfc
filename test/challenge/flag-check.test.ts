// The flag check (src/challenge/flag-check.ts): the expected flags computed here from the contract's formula
// (docs/api.md#flags), one row per situation.
import { createHmac } from 'node:crypto'
import t from 'tap'
import { checkFlag, FlagCheckRequestSchema, type FlagCheckRequest } from '../../src/challenge/flag-check.js'
import { compileSchema } from '../../src/contract/validator.js'

const SECRET = 'a flag secret for the tests'
const hmac32 = (message: string) => createHmac('sha256', SECRET).update(message).digest('hex').slice(0, 32)
const perOwner = (kind: string, id: string) => `flag{${hmac32(`challenges/web-login/${kind}/${id}`)}}`
const perInstance = (uid: string) => `CTF[${hmac32(uid)}]`

const alice = { kind: 'User', id: 'alice' } as const
const bob = { kind: 'User', id: 'bob' } as const
const teamAlice = { kind: 'Team', id: 'alice' } as const

function request(submitted: string, overrides: Partial<FlagCheckRequest> = {}): FlagCheckRequest {
  return {
    namespace: 'challenges',
    definition: 'web-login',
    flag: { mode: 'PerOwner', prefix: 'flag{', suffix: '}' },
    owner: alice,
    candidates: [alice, bob, teamAlice],
    submitted,
    ...overrides,
  }
}

t.test("PerOwner: the owner's own flag, another owner's, and anything else", async (t) => {
  const rows: [string, FlagCheckRequest, ReturnType<typeof checkFlag>][] = [
    ['its own flag', request(perOwner('User', 'alice')), { result: 'correct' }],
    [
      'its own flag, with no record and no candidates',
      request(perOwner('User', 'alice'), { candidates: [] }),
      { result: 'correct' },
    ],
    ["bob's flag", request(perOwner('User', 'bob')), { result: 'anotherOwner', owner: bob }],
    [
      "the team of the same id's flag",
      request(perOwner('Team', 'alice')),
      { result: 'anotherOwner', owner: teamAlice },
    ],
    [
      "bob's flag, bob not a candidate",
      request(perOwner('User', 'bob'), { candidates: [alice] }),
      { result: 'incorrect' },
    ],
    ['a guess', request('flag{0123456789abcdef0123456789abcdef}'), { result: 'incorrect' }],
    ['an empty submission', request(''), { result: 'incorrect' }],
    [
      'its flag with another prefix',
      request(perOwner('User', 'alice').replace('flag{', 'FLAG{')),
      { result: 'incorrect' },
    ],
    [
      "another namespace's flag of the same owner",
      request(`flag{${hmac32('other/web-login/User/alice')}}`),
      { result: 'incorrect' },
    ],
  ]
  for (const [what, input, expected] of rows) t.strictSame(checkFlag(input, SECRET), expected, what)
})

t.test('PerInstance: made from the uid, so only while the record (its uid) is known', async (t) => {
  const flag = { mode: 'PerInstance', prefix: 'CTF[', suffix: ']' } as const
  const withUids = {
    owner: { ...alice, uid: 'uid-a' },
    candidates: [
      { ...alice, uid: 'uid-a' },
      { ...bob, uid: 'uid-b' },
    ],
  }
  const gone =
    "A PerInstance flag is made from the Challenge's uid, and this owner's Challenge record is gone: it cannot be checked any more."
  const rows: [string, FlagCheckRequest, ReturnType<typeof checkFlag>][] = [
    ['its own flag', request(perInstance('uid-a'), { flag, ...withUids }), { result: 'correct' }],
    ["bob's flag", request(perInstance('uid-b'), { flag, ...withUids }), { result: 'anotherOwner', owner: bob }],
    ['a guess', request(perInstance('uid-c'), { flag, ...withUids }), { result: 'incorrect' }],
    [
      'its record gone',
      request(perInstance('uid-a'), { flag, candidates: [] }),
      { result: 'unverifiable', message: gone },
    ],
    [
      "its record gone, bob's flag",
      request(perInstance('uid-b'), { flag, candidates: [{ ...bob, uid: 'uid-b' }] }),
      { result: 'anotherOwner', owner: bob },
    ],
    [
      'a candidate without a uid never matches',
      request(perInstance('uid-a'), { flag, owner: { ...alice, uid: 'uid-x' }, candidates: [bob] }),
      { result: 'incorrect' },
    ],
  ]
  for (const [what, input, expected] of rows) t.strictSame(checkFlag(input, SECRET), expected, what)
})

t.test('PerInstance: what a record-less owner, the owner among the candidates and a shared uid give', async (t) => {
  const flag = { mode: 'PerInstance', prefix: '', suffix: '' } as const
  const carol = { kind: 'User', id: 'carol' } as const
  const rows: [string, FlagCheckRequest, ReturnType<typeof checkFlag>][] = [
    [
      'an empty submission for an owner whose record is gone is not its flag',
      request('', { flag, candidates: [] }),
      {
        result: 'unverifiable',
        message:
          "A PerInstance flag is made from the Challenge's uid, and this owner's Challenge record is gone: it cannot be checked any more.",
      },
    ],
    [
      "the flag of the owner's earlier instance is no other owner's",
      request(perInstance('uid-old').slice(4, -1), {
        flag,
        owner: { ...alice, uid: 'uid-new' },
        candidates: [{ ...alice, uid: 'uid-old' }],
      }),
      { result: 'incorrect' },
    ],
    [
      'two candidates with one uid: the first named is told',
      request(perInstance('uid-x').slice(4, -1), {
        flag,
        owner: { ...alice, uid: 'uid-a' },
        candidates: [
          { ...bob, uid: 'uid-x' },
          { ...carol, uid: 'uid-x' },
        ],
      }),
      { result: 'anotherOwner', owner: bob },
    ],
  ]
  for (const [what, input, expected] of rows) t.strictSame(checkFlag(input, SECRET), expected, what)
})

t.test('the check request is refused when any part of it is out of the contract', async (t) => {
  const validate = compileSchema(FlagCheckRequestSchema)
  const valid = request('flag{x}', { owner: { ...alice, uid: 'uid-a' } })
  t.strictSame(validate(valid), true, 'a whole request')
  const bad: [string, unknown][] = [
    ['an owner kind that is neither User nor Team', { ...valid, owner: { kind: 'Robot', id: 'alice' } }],
    ['an empty owner kind', { ...valid, owner: { kind: '', id: 'alice' } }],
    ['an owner id that is not a DNS label', { ...valid, owner: { kind: 'User', id: 'Alice!' } }],
    ['an owner id of 64 characters', { ...valid, owner: { kind: 'User', id: 'a'.repeat(64) } }],
    ['an empty uid', { ...valid, owner: { ...alice, uid: '' } }],
    ['a uid of 129 characters', { ...valid, owner: { ...alice, uid: 'u'.repeat(129) } }],
    ['an owner with another field', { ...valid, owner: { ...alice, role: 'admin' } }],
    ['a candidate of another kind', { ...valid, candidates: [{ kind: 'Team ', id: 'x' }] }],
    ['a namespace that is not a DNS label', { ...valid, namespace: 'Challenges' }],
    ['a namespace of 64 characters', { ...valid, namespace: 'n'.repeat(64) }],
    ['a definition name with a slash', { ...valid, definition: 'web/login' }],
    ['a definition name of 64 characters', { ...valid, definition: 'd'.repeat(64) }],
    ['a Static flag (never checked here)', { ...valid, flag: { ...valid.flag, mode: 'Static' } }],
    ['an empty flag mode', { ...valid, flag: { ...valid.flag, mode: '' } }],
    ['a prefix of 65 characters', { ...valid, flag: { ...valid.flag, prefix: 'p'.repeat(65) } }],
    ['a suffix of 65 characters', { ...valid, flag: { ...valid.flag, suffix: 's'.repeat(65) } }],
    ['flag settings with another field', { ...valid, flag: { ...valid.flag, env: 'FLAG' } }],
    ['a submission of 1025 characters', { ...valid, submitted: 'x'.repeat(1025) }],
    ['a request with another field', { ...valid, secret: 'x' }],
  ]
  for (const [what, input] of bad) t.strictSame(validate(input), false, what)
})

t.test('a check compares at most 10 000 candidates: one more and the request is refused', async (t) => {
  const validate = compileSchema(FlagCheckRequestSchema)
  const owners = (count: number) => Array.from({ length: count }, (_, i) => ({ kind: 'User' as const, id: `u${i}` }))
  t.strictSame(validate(request('flag{x}', { candidates: owners(10_000) })), true, '10 000')
  t.strictSame(validate(request('flag{x}', { candidates: owners(10_001) })), false, '10 001')
})
