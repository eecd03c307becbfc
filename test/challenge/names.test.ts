import { createHash } from 'node:crypto'
import t from 'tap'
import { childLabels, childNames, instanceBaseName, podLabels } from '../../src/challenge/names.js'

const DNS_1035 = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/
const UID_A = '0b6a4c1e-7d2f-4e39-9c55-3f0d8a6b2e11'
const UID_B = 'c43e9a70-1b8d-4a2c-8f67-95e2d0c4b7a3'

t.test('a short DNS-1035 name is kept as it is', async (t) => {
  t.equal(instanceBaseName('web-login-u-alice', UID_A), 'web-login-u-alice')
  t.strictSame(childNames('web-login-u-alice', UID_A), {
    base: 'web-login-u-alice',
    uid: UID_A,
    flagSecret: 'web-login-u-alice-flag',
    isolatePolicy: 'web-login-u-alice-isolate',
    exposePolicy: 'web-login-u-alice-expose',
    internetPolicy: 'web-login-u-alice-internet',
  })
})

t.test('every child name is a valid DNS-1035 label for any valid Challenge name', async (t) => {
  const names = [
    'a',
    'x'.repeat(54),
    'x'.repeat(55),
    'y'.repeat(253),
    'web.login.u.alice',
    '1337-pwn-u-bob',
    '0',
    '9.9.9',
    `${'a'.repeat(44)}---------------${'b'.repeat(30)}`,
    'team-' + 'z'.repeat(200) + '.example',
    'web--0123456789ab',
  ]
  for (const name of names) {
    const children = childNames(name, UID_A)
    for (const [role, value] of Object.entries(children)) {
      if (role === 'uid') continue
      t.match(value, DNS_1035, `${role} of ${name.slice(0, 20)}…`)
      t.ok(value.length <= 63, `${role} of ${name.slice(0, 20)}… is at most 63 characters`)
    }
  }
})

t.test('names that need shortening keep a readable prefix and differ by a hash of the uid', async (t) => {
  const long = `${'challenge-'.repeat(10)}u-alice`
  t.not(instanceBaseName(long, UID_A), instanceBaseName(long, UID_B), 'the same long name, recreated: other children')
  t.match(instanceBaseName(long, UID_A), /^challenge-challenge-.*--[0-9a-f]{12}$/)
  t.equal(instanceBaseName('web.login', UID_A), instanceBaseName('web.login', UID_A), 'stable for one Challenge')
  t.match(instanceBaseName('web.login', UID_A), /^web-login--[0-9a-f]{12}$/)
  t.match(instanceBaseName('1337', UID_A), /^c1337--[0-9a-f]{12}$/, 'starts with a letter')
  t.equal(instanceBaseName('x'.repeat(54), UID_A), 'x'.repeat(54), 'the longest kept name')
  t.match(instanceBaseName('x'.repeat(55), UID_A), /^x{40}--[0-9a-f]{12}$/, 'one more character is shortened')
})

t.test('the shortened base, exactly: one row per rule of the prefix', async (t) => {
  const hash = createHash('sha256').update(UID_A).digest('hex').slice(0, 12)
  const a36 = 'a'.repeat(36)
  const rows: [string, string, string][] = [
    ['one letter is a label, kept', 'a', 'a'],
    ['capitals lowered, other characters dashes', 'Web.Login_U@Alice', `web-login-u-alice--${hash}`],
    ['every trailing dash of the cut prefix dropped', `A${'b'.repeat(37)}!!!c`, `a${'b'.repeat(37)}--${hash}`],
    ['a leading digit gets a c, and the prefix stays 40 long', `9${'A'.repeat(60)}`, `c9${'a'.repeat(38)}--${hash}`],
    ['trailing dashes dropped again after the c', `9${a36}--bzzz`, `c9${a36}--${hash}`],
    ['a name that is all dashes and digits', '---', `c--${hash}`],
    ['dashes inside the prefix stay after the c', '-a-', `c-a--${hash}`],
  ]
  for (const [what, name, base] of rows) t.equal(instanceBaseName(name, UID_A), base, what)
})

/**
 * Collisions by construction: for every way a name gets shortened (too long, a dot, a leading digit, a name that
 * looks shortened already), a second Challenge whose name is the first one's shortened base. Every pair must
 * differ in every child name and in both pod labels.
 */
t.test('no Challenge can take the child names or labels of another, whatever it is named', async (t) => {
  const victims = [
    'web-login-u-victim-with-a-rather-long-user-identifier-0001', // too long (58)
    'web.login-u-victim', // a dot
    '1337-pwn-u-victim', // a leading digit
    'web-login-u-victim--0123456789ab', // a kept-looking name in the shortened shape
    `${'a'.repeat(40)}--0123456789ab`, // the shortened shape at full length
  ]
  for (const victim of victims) {
    const victimNames = childNames(victim, UID_A)
    t.not(victimNames.base, victim, `${victim} is shortened`)
    // The attacker names their Challenge after the victim's shortened base (a valid, short DNS-1035 name).
    const attacker = victimNames.base
    const attackerNames = childNames(attacker, UID_B)
    for (const role of ['base', 'flagSecret', 'isolatePolicy', 'exposePolicy', 'internetPolicy'] as const) {
      t.not(attackerNames[role], victimNames[role], `${role}: ${attacker} vs ${victim}`)
    }
    t.not(
      childLabels(attackerNames)['challenge-hooks.dev/instance'],
      childLabels(victimNames)['challenge-hooks.dev/instance'],
    )
    t.not(podLabels(attackerNames)['challenge-hooks.dev/uid'], podLabels(victimNames)['challenge-hooks.dev/uid'])
    // And the same owner trying the victim's name with the attacker's uid gets its own hash.
    t.not(childNames(victim, UID_B).base, victimNames.base, `${victim} under another uid`)
  }
})

t.test('pod labels: the instance and the uid; an instance made before the uid label keeps its selector', async (t) => {
  const names = childNames('web-u-alice', UID_A)
  t.strictSame(podLabels(names), { 'challenge-hooks.dev/instance': 'web-u-alice', 'challenge-hooks.dev/uid': UID_A })
  t.strictSame(podLabels(names, true), { 'challenge-hooks.dev/instance': 'web-u-alice' })
  t.strictSame(childLabels(names), {
    'app.kubernetes.io/managed-by': 'challenge-hooks',
    'challenge-hooks.dev/instance': 'web-u-alice',
    'challenge-hooks.dev/uid': UID_A,
  })
})
