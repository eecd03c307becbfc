// `npm run test:hand-made-bugs`: the bugs test audits made by hand in src/challenge/ and manifests/, each made again
// in a copy of the working tree and run against the tests that must catch it, outside the recorded fixtures and the
// cluster suite. Prints one line per bug and test, CAUGHT or MISSED, and fails when any is missed or a bug no longer
// applies (the code it edits changed: update its text here). The working tree itself is never edited.
import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Each bug: what it does, the file, the text it replaces and its replacement, the tests that must fail. */
const BUGS = [
  {
    bug: 'the hard end takes spec.deadline when set, ignoring an earlier availableUntil',
    file: 'src/challenge/lifecycle.ts',
    from: 'hardEnd: earliest(deadline, context.definition.availableUntil)',
    to: 'hardEnd: deadline ?? context.definition.availableUntil',
    tests: ['test/challenge/combinations.test.ts', 'test/fuzz/timers.test.ts'],
  },
  {
    bug: 'a renewal ignores availableUntil',
    file: 'src/challenge/renewal.ts',
    from: 'const { definition, hardEnd, lifetimeMs, now } = started',
    to: 'const { definition, lifetimeMs, now } = started; const hardEnd = run.world.challenge.spec.deadline === undefined ? undefined : Date.parse(run.world.challenge.spec.deadline)',
    tests: ['test/challenge/combinations.test.ts', 'test/fuzz/timers.test.ts'],
  },
  {
    bug: 'a renewal is accepted while the instance starts (any decision of the last rule)',
    file: 'src/challenge/renewal.ts',
    from: 'if (decision.phase !== Phase.Running || started === undefined)',
    to: 'if (started === undefined)',
    tests: ['test/challenge/controls.test.ts', 'test/fuzz/timers.test.ts'],
  },
  {
    bug: "a renewal uses the definition's lifetime, ignoring spec.lifetimeSeconds",
    file: 'src/challenge/renewal.ts',
    from: 'earliest(now + lifetimeMs, hardEnd)',
    to: 'earliest(now + definition.lifetimeSeconds * 1000, hardEnd)',
    tests: ['test/challenge/combinations.test.ts', 'test/fuzz/timers.test.ts'],
  },
  {
    bug: "the isolate policy's selector ignores the older instance-label-only form",
    file: 'src/challenge/world.ts',
    from: 'podLabels: podLabels(names, legacySelector(children, names.base)),',
    to: 'podLabels: podLabels(names, false),',
    tests: ['test/fuzz/selectors.test.ts'],
  },
  {
    bug: "the owner id pattern accepts _ and . in the hook's schema",
    file: 'src/contract/api.ts',
    from: 'id: Type.String({ pattern: DNS_LABEL }),',
    to: "id: Type.String({ pattern: '^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$' }),",
    tests: ['test/challenge/crd-agreement.test.ts'],
  },
  {
    bug: 'the instance id drops the namespace',
    file: 'src/challenge/hmac.ts',
    from: 'return hmacHex(secret, `instance:${ownerMessage(key)}`).slice(0, 16)',
    to: "return hmacHex(secret, `instance:${ownerMessage({ ...key, namespace: '' })}`).slice(0, 16)",
    tests: ['test/challenge/identity.test.ts'],
  },
  {
    bug: 'the DNS port rendered as the string "53"',
    file: 'src/challenge/children.ts',
    from: "{ protocol: 'UDP', port },",
    to: "{ protocol: 'UDP', port: String(port) as unknown as number },",
    tests: ['test/challenge/children.test.ts'],
  },
  {
    bug: "Running counted from the pod's Ready alone, ignoring a path created or accepted after it",
    file: 'src/challenge/running.ts',
    from: 'const since = Math.max(ready, context.observed.since)',
    to: 'const since = ready',
    tests: ['test/challenge/settle.test.ts', 'test/fuzz/timers.test.ts', 'test/e2e/settle.test.ts'],
  },
  {
    bug: 'the author role granted override, which makes every author an operator',
    file: 'manifests/roles.yaml',
    from: `  name: challenge-hooks-author
rules:
  - apiGroups: [challenge-hooks.dev]
    resources: [challengedefinitions]
    verbs: [get, list, watch, create, patch, update, delete]`,
    to: `  name: challenge-hooks-author
rules:
  - apiGroups: [challenge-hooks.dev]
    resources: [challengedefinitions]
    verbs: [get, list, watch, create, patch, update, delete, override]`,
    tests: ['test/manifests/roles.test.ts', 'test/manifests/admission-policies.test.ts'],
  },
  {
    bug: "the author policy's CEL lets any DELETE through",
    file: 'manifests/admission-policy.yaml',
    from: "request.operation == 'DELETE' && has(namespaceObject.metadata.deletionTimestamp)",
    to: "request.operation == 'DELETE'",
    tests: ['test/manifests/admission-policies.test.ts'],
  },
]

const root = process.cwd()
const copy = mkdtempSync(join(tmpdir(), 'hand-made-bugs-'))
let failures = 0
try {
  // The working tree's tracked and new files, as they are now (uncommitted edits included), beside its node_modules.
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], {
    encoding: 'utf8',
  })
    .split('\0')
    .filter(Boolean)
  for (const file of files) {
    try {
      cpSync(join(root, file), join(copy, file))
    } catch (error) {
      // A file deleted in the working tree but still in the index: nothing to copy.
      if (error.code !== 'ENOENT') throw error
    }
  }
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'))
  const passes = (test) =>
    spawnSync('npx', ['tap', '--disable-coverage', '--reporter=silent', test], { cwd: copy }).status === 0
  // A test that fails without a bug catches nothing: each must pass on the code as it is first.
  for (const test of new Set(BUGS.flatMap((each) => each.tests))) {
    if (passes(test)) continue
    console.log(`${test} fails without any bug: fix it first`)
    failures += 1
  }
  for (const { bug, file, from, to, tests } of BUGS) {
    const path = join(copy, file)
    const source = readFileSync(path, 'utf8')
    if (source.split(from).length !== 2) {
      console.log(`${bug} | ${file} no longer holds the text it edits once: update scripts/hand-made-bugs.mjs`)
      failures += 1
      continue
    }
    writeFileSync(path, source.replace(from, to))
    for (const test of tests) {
      const caught = !passes(test)
      if (!caught) failures += 1
      console.log(`${bug} | ${test} | ${caught ? 'CAUGHT' : 'MISSED'}`)
    }
    writeFileSync(path, source)
  }
} finally {
  rmSync(copy, { recursive: true, force: true })
}
console.log(
  failures === 0 ? `every bug caught (${BUGS.length} bugs)` : `${failures} failed (missed, or failing without a bug)`,
)
process.exitCode = failures === 0 ? 0 : 1
