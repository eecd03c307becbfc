// The platform guide's names for Challenges (docs/platform-guide.md, "One object per player and challenge"): one name
// per (definition, owner kind, owner id), never the same name for two of them, and always a name the API server
// takes. Injective because it can be read back: the owner id holds no dot, so the last dot ends the definition and the
// kind. Checked over every definition name and owner id the patterns allow, and on the pair the dashed scheme gave
// one name.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import t from 'tap'
import { DEFINITION_NAME, DNS_LABEL, DNS_SUBDOMAIN } from '../../src/contract/patterns.js'
import { repoRoot } from '../helpers/manifests.js'

const guide = readFileSync(join(repoRoot, 'docs/platform-guide.md'), 'utf8')
const KINDS = { User: 'u', Team: 't' } as const
type Kind = keyof typeof KINDS

/** The guide's scheme: `<definition>.u.<user id>` or `<definition>.t.<team id>`. */
function instanceName(definition: string, kind: Kind, id: string): string {
  return `${definition}.${KINDS[kind]}.${id}`
}

/** The name read back: the owner id after the last dot, the kind before it, the definition the rest. */
function readBack(name: string): [string, Kind, string] {
  const id = name.slice(name.lastIndexOf('.') + 1)
  const rest = name.slice(0, name.lastIndexOf('.'))
  const letter = rest.slice(rest.lastIndexOf('.') + 1)
  const kind = (Object.keys(KINDS) as Kind[]).find((each) => KINDS[each] === letter) as Kind
  return [rest.slice(0, rest.lastIndexOf('.')), kind, id]
}

t.test('the guide states the scheme this test reads', async (t) => {
  t.match(guide, 'Give each instance a deterministic name, `<definition>.u.<user id>` or `<definition>.t.<team id>`')
  t.match(guide, 'check that the Challenge is the one the name stands for')
  t.match(guide, '`spec.owner.kind`, `spec.owner.id` and `spec.definitionRef.name` must be the owner and definition')
})

// Names from small alphabets that hold the separators, so that near misses (`-u-`, `.u.`, dots, dashes) are common.
// A definition's name is an object's name (a DNS subdomain) that a Challenge's definitionRef and label can hold.
const definitionName = fc
  .string({ unit: fc.constantFrom('a', 'u', 't', '0', '-', '.'), minLength: 1, maxLength: 63 })
  .filter((name) => new RegExp(DEFINITION_NAME).test(name) && new RegExp(DNS_SUBDOMAIN).test(name))
const ownerId = fc
  .string({ unit: fc.constantFrom('a', 'u', 't', '0', '-'), minLength: 1, maxLength: 63 })
  .filter((id) => new RegExp(DNS_LABEL).test(id))
const kind = fc.constantFrom<Kind>('User', 'Team')

t.test('one name per definition and owner, read back from it: no two share a name', async (t) => {
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(definitionName, kind, ownerId, (definition, owner, id) => {
        const name = instanceName(definition, owner, id)
        return JSON.stringify(readBack(name)) === JSON.stringify([definition, owner, id])
      }),
      { numRuns: 20_000 },
    ),
  )
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(
          fc.tuple(definitionName, kind, ownerId),
          fc.tuple(definitionName, kind, ownerId),
          (a, b) => JSON.stringify(a) === JSON.stringify(b) || instanceName(...a) !== instanceName(...b),
        ),
        { numRuns: 20_000 },
      ),
    'two different owners or definitions never get one name',
  )
})

t.test('every name is a name the API server takes for a Challenge (a DNS subdomain)', async (t) => {
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(definitionName, kind, ownerId, (definition, owner, id) =>
        new RegExp(DNS_SUBDOMAIN).test(instanceName(definition, owner, id)),
      ),
      { numRuns: 5_000 },
    ),
  )
  const longest = instanceName('d'.repeat(63), 'Team', 'o'.repeat(63))
  t.equal(longest.length, 129, 'the longest: 129 characters, of 253')
  t.ok(new RegExp(DNS_SUBDOMAIN).test(longest))
})

t.test('the pair the dashed scheme confused gets two names', async (t) => {
  const dashed = (definition: string, id: string) => `${definition}-u-${id}`
  t.equal(dashed('web', 's-u-alice'), dashed('web-u-s', 'alice'), 'the dashed scheme: one name for both')
  t.strictSame(
    [instanceName('web', 'User', 's-u-alice'), instanceName('web-u-s', 'User', 'alice')],
    ['web.u.s-u-alice', 'web-u-s.u.alice'],
  )
  t.not(instanceName('web', 'User', 'alice'), instanceName('web', 'Team', 'alice'), 'a user and a team of one id')
})
