import t from 'tap'
import { childNames, instanceBaseName } from '../../src/challenge/names.js'

const DNS_1035 = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/

t.test('a short DNS-1035 name is kept as it is', async (t) => {
  t.equal(instanceBaseName('web-login-u-alice'), 'web-login-u-alice')
  t.same(childNames('web-login-u-alice'), {
    base: 'web-login-u-alice',
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
  ]
  for (const name of names) {
    const children = childNames(name)
    for (const [role, value] of Object.entries(children)) {
      t.match(value, DNS_1035, `${role} of ${name.slice(0, 20)}…`)
      t.ok(value.length <= 63, `${role} of ${name.slice(0, 20)}… is at most 63 characters`)
    }
  }
})

t.test('names that need shortening keep a readable prefix and differ by a hash of the whole name', async (t) => {
  const long1 = `${'challenge-'.repeat(10)}u-alice`
  const long2 = `${'challenge-'.repeat(10)}u-bob`
  t.not(instanceBaseName(long1), instanceBaseName(long2))
  t.match(instanceBaseName(long1), /^challenge-challenge-.*-[0-9a-f]{8}$/)
  t.equal(instanceBaseName('web.login'), instanceBaseName('web.login'), 'stable')
  t.match(instanceBaseName('web.login'), /^web-login-[0-9a-f]{8}$/)
  t.match(instanceBaseName('1337'), /^c1337-[0-9a-f]{8}$/, 'starts with a letter')
})
