// The flag and the parameters (src/challenge/flag.ts), one row per situation: the contract's formula computed here
// independently, every refusal of the parameters and its exact message, and a Static flag read only from its own
// Secret and key.
import { createHmac } from 'node:crypto'
import t from 'tap'
import { Bounds, Label } from '../../src/contract/api.js'
import { resolveDefinition, type ResolvedDefinition } from '../../src/challenge/definition.js'
import { flagData, parametersProblem, type FlagInput } from '../../src/challenge/flag.js'
import { indexObjects } from '../../src/challenge/observed.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { NAMESPACE, object, UID } from './objects.js'

const SECRET = 'a flag secret for the tests'
const owner = { namespace: NAMESPACE, definition: 'web-login', ownerKind: 'team', ownerId: 'alice' }
const hmac32 = (message: string) => createHmac('sha256', SECRET).update(message).digest('hex').slice(0, 32)
const decode = (data: string) => Buffer.from(data, 'base64').toString('utf8')

function definition(flag: Record<string, unknown>): ResolvedDefinition {
  const resolved = resolveDefinition('web-login', {
    pod: { containers: [{ name: 'web', image: 'web:1' }] },
    expose: { type: 'HTTP', port: 80 },
    flag,
  })
  if (!resolved.found) throw new Error(resolved.message)
  return resolved.definition
}

function instance(...secrets: KubeObject[]): FlagInput {
  return {
    ownerKey: owner,
    uid: UID,
    related: indexObjects({ 'Secret.v1': Object.fromEntries(secrets.map((s) => [s.metadata.name, s])) }, NAMESPACE),
  }
}

const secret = (name: string, data: Record<string, unknown>) => object('Secret', name, { data })

t.test('parametersProblem: prototype names, the flag variable and the size bound, each named', async (t) => {
  const limit = Bounds.parametersText
  const rows: [string, Record<string, string>, string | undefined][] = [
    ['no parameters', {}, undefined],
    ['ordinary parameters', { LEVEL: 'hard', SEED: '42' }, undefined],
    [
      '__proto__',
      JSON.parse('{"__proto__": "x"}') as Record<string, string>,
      'spec.parameters: the name __proto__ is refused (it names an object prototype).',
    ],
    [
      'constructor',
      { A: 'a', constructor: 'x' },
      'spec.parameters: the name constructor is refused (it names an object prototype).',
    ],
    ['prototype', { prototype: 'x' }, 'spec.parameters: the name prototype is refused (it names an object prototype).'],
    ['a name that only contains a prototype name', { my_prototype: 'x', constructors: 'y' }, undefined],
    ['the flag variable', { FLAG: 'mine' }, 'spec.parameters: FLAG is reserved for the flag.'],
    ['names and values exactly at the bound', { AB: 'x'.repeat(limit - 2) }, undefined],
    [
      'one character over, counted over names too',
      { ABC: 'x'.repeat(limit - 2) },
      `spec.parameters: the names and values together must be at most ${limit} characters, got ${limit + 1}.`,
    ],
    [
      'over, spread over several entries',
      { A: 'x'.repeat(limit / 2), B: 'x'.repeat(limit / 2) },
      `spec.parameters: the names and values together must be at most ${limit} characters, got ${limit + 2}.`,
    ],
  ]
  for (const [what, parameters, problem] of rows) t.equal(parametersProblem(parameters, 'FLAG'), problem, what)
  t.equal(
    parametersProblem({ FLAG: 'x' }, 'CTF_FLAG'),
    undefined,
    'FLAG is free when the flag goes to another variable',
  )
  t.equal(
    parametersProblem({ CTF_FLAG: 'x' }, 'CTF_FLAG'),
    'spec.parameters: CTF_FLAG is reserved for the flag.',
    'the flag variable the definition names',
  )
})

t.test('flagData: PerOwner and PerInstance are the contract HMAC, wrapped in the prefix and suffix', async (t) => {
  const perOwner = flagData(instance(), definition({ mode: 'PerOwner', prefix: 'CTF{', suffix: '}' }), SECRET)
  t.strictSame(
    perOwner,
    { ok: true, data: Buffer.from(`CTF{${hmac32('ctf/web-login/team/alice')}}`).toString('base64') },
    'PerOwner: over namespace/definition/kind/id',
  )
  const defaults = flagData(instance(), definition({}), SECRET)
  t.equal(
    defaults.ok && decode(defaults.data),
    `flag{${hmac32('ctf/web-login/team/alice')}}`,
    'PerOwner with flag{ and } by default',
  )
  const perInstance = flagData(instance(), definition({ mode: 'PerInstance', prefix: 'p-', suffix: '-s' }), SECRET)
  t.equal(perInstance.ok && decode(perInstance.data), `p-${hmac32(UID)}-s`, 'PerInstance: over the uid')
  const otherOwner = flagData({ ...instance(), ownerKey: { ...owner, ownerId: 'bob' } }, definition({}), SECRET)
  t.not(otherOwner.ok && otherOwner.data, defaults.ok && defaults.data, 'another owner, another flag')
  const unicode = flagData(instance(), definition({ prefix: 'ƒ{', suffix: '}✓' }), SECRET)
  t.equal(unicode.ok && decode(unicode.data), `ƒ{${hmac32('ctf/web-login/team/alice')}}✓`, 'the bytes are UTF-8')
})

t.test('flagData: a Static flag comes from its own Secret and key, and a missing one is named', async (t) => {
  const flag = { mode: 'Static', staticSecretRef: { name: 'web-login-static', key: 'flag' } }
  const stored = Buffer.from('flag{static}').toString('base64')
  const missing = {
    ok: false,
    message: `The flag Secret "web-login-static" (key "flag") was not found; it must carry the label ${Label.definition}=web-login.`,
  }
  const rows: [string, KubeObject[], object][] = [
    ['its Secret and key', [secret('web-login-static', { flag: stored })], { ok: true, data: stored }],
    [
      'another Secret listed first',
      [secret('another', { flag: 'b3RoZXI=' }), secret('web-login-static', { flag: stored })],
      { ok: true, data: stored },
    ],
    ['only another Secret', [secret('another', { flag: stored })], missing],
    ['no Secret', [], missing],
    ['the key missing', [secret('web-login-static', { other: stored })], missing],
    ['the key empty', [secret('web-login-static', { flag: '' })], missing],
    ['the key not a string', [secret('web-login-static', { flag: 42 })], missing],
    ['no data at all', [object('Secret', 'web-login-static')], missing],
  ]
  for (const [what, secrets, answer] of rows)
    t.strictSame(flagData(instance(...secrets), definition(flag), SECRET), answer, what)
})
