// ESLint (npm run lint): the recommended rules of ESLint and typescript-eslint, type-aware (the type checker's view
// through tsconfig.json, which covers src/, test/, bench/ and scripts/), over every TypeScript and JavaScript file
// of those directories. Formatting is Prettier's (.prettierrc), not ESLint's. `.ci/run` runs it as a suite: any
// finding fails CI. Every rule turned off or narrowed below says why.
import js from '@eslint/js'
import globals from 'globals'
import tseslint from 'typescript-eslint'

// The layers of src/ (docs/design.md, "The layers"): process → http | gateway | preview → challenge → config →
// contract, each importing only the ones after it, and the test layout (docs/development.md, "Test layout"). ESLint's
// own no-restricted-imports holds them: it matches the import's text, not the file it resolves to, so each pattern
// below is written for the depth of the files it applies to (such a folder is flat, which FLAT keeps true: a file
// deeper down is a finding) and says what a folder may import rather than what it may not.
// test/tooling/layers.test.ts lints a bad import of each kind and checks the exact finding.
const layer = (files, ignores, ...patterns) => ({
  files,
  ignores,
  rules: { 'no-restricted-imports': ['error', { patterns }] },
})
const leaving = (regex, message) => ({ regex, message })
const CODE = '*.{ts,mjs,js}'

const CHALLENGE =
  'src/challenge/ is the pure core: it imports only src/config/ and src/contract/ (and itself), no HTTP server, logger, metrics, files or sockets.'
const CONFIG = 'src/config/ imports only src/contract/.'
const CONTRACT = 'src/contract/ is the wire and CRD contract: it imports nothing of the project.'
const SHELL =
  'src/http/, src/gateway/ and the preview (src/preview.ts, src/preview-command.ts) import neither each other nor a process entry.'
const FLAT = 'This folder is flat: the import rules of eslint.config.js count one ../ to leave it.'
const SUITE =
  'A suite (the fast one, test/cluster/, test/node/, test/load/) imports only its own files, test/support/, test/helpers/ and the code under test: what suites share lives in test/support/.'
const SHARED = 'test/support/ and test/helpers/ import no suite: a suite imports them, never the other way round.'
const BENCH = 'The benchmarks import test/support/ and test/helpers/, never a suite.'
// What a shell may not import: a process entry of src/ (the hook server, the preview's cli.ts, the gateway, the
// isolation gate) or another shell's file (the preview).
const ENTRIES = '(main|server|cli|preview|preview-command|gateway-server|gate|isolation-gate)\\.js$'

// Each file is in one group at most: a later group's no-restricted-imports would replace an earlier one's.
const layers = [
  layer([`src/contract/${CODE}`], [], leaving('^\\.\\./', CONTRACT)),
  layer([`src/config/${CODE}`], [], leaving('^\\.\\./(?!contract/)', CONFIG)),
  layer(
    [`src/challenge/${CODE}`],
    [],
    leaving('^\\.\\./(?!config/|contract/)', CHALLENGE),
    { group: ['fastify', 'fastify-*', '@fastify/*', 'pino', 'pino-*', 'prom-client'], message: CHALLENGE },
    leaving('^(node:)?(fs|net|http|https|http2|tls|dgram|child_process)(/|$)', CHALLENGE),
  ),
  layer([`src/http/**/${CODE}`], [], leaving(`^(\\.\\./)+(gateway/|${ENTRIES})`, SHELL)),
  layer([`src/gateway/**/${CODE}`], [], leaving(`^(\\.\\./)+(http/|${ENTRIES})`, SHELL)),
  // The preview's engine and its command: one layer (the command reads the engine), below the entry cli.ts.
  layer(
    ['src/preview.ts', 'src/preview-command.ts'],
    [],
    leaving('^\\./(http/|gateway/|(main|server|cli|gateway-server|gate|isolation-gate)\\.js$)', SHELL),
  ),
  layer([`test/{cluster,node,load}/${CODE}`], [], leaving('^\\.\\./(?!support/|helpers/|\\.\\./)', SUITE)),
  layer([`test/${CODE}`], [], leaving('^\\./(cluster|node|load)/', SUITE)),
  layer(
    [`test/*/${CODE}`],
    [`test/{cluster,node,load,support,helpers}/${CODE}`],
    leaving('^\\.\\./(cluster|node|load)/', SUITE),
  ),
  layer([`test/{support,helpers}/${CODE}`], [], leaving('^\\.\\./(?!support/|helpers/|\\.\\./)', SHARED)),
  layer([`test/support/*/${CODE}`], [], leaving('^\\.\\./\\.\\./(?!support/|helpers/|\\.\\./)', SHARED)),
  layer([`bench/**/${CODE}`], [], leaving('^(\\.\\./)+test/(?!support/|helpers/)', BENCH)),
  {
    // The folders whose rules above count the ../ of an import: a file deeper down would leave them unseen.
    files: [`src/{contract,config,challenge}/*/**/${CODE}`, `test/*/*/**/${CODE}`],
    ignores: [`test/support/*/${CODE}`],
    rules: { 'no-restricted-syntax': ['error', { selector: 'Program', message: FLAT }] },
  },
]

export default tseslint.config(
  {
    // Generated or downloaded: builds, bundles, coverage and reports.
    ignores: [
      'dist/',
      'bench/out/',
      'test/mutation/out/',
      'coverage/',
      '.tap/',
      'reports/',
      '.stryker-tmp/',
      '.cluster/',
      'node_modules/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // The code's convention for a value left out on purpose: a leading underscore (`{ status: _status, ...rest }`
      // drops a field, `_request` is a parameter a callback signature requires).
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
        },
      ],
      // `async` without `await` is how Fastify's plugins, hooks and handlers, tap's subtests and the helpers that
      // wait for a condition say that they may be asynchronous; the rule would turn them into callbacks or wrappers.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // The tests read JSON they did not write (hook answers, Kubernetes objects, recorded requests) through `any` on
    // purpose and assert on its shape: a wrong shape fails the assertion, which is the check these rules would add.
    // The same JSON turned into text for a message may be any value.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // tap awaits every subtest itself, in order: `t.test(...)` is not a promise left floating.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [{ from: 'package', package: '@tapjs/test', name: ['test', 'todo', 'skip', 'only'] }],
        },
      ],
    },
  },
  {
    // The rush report renders the result files of every earlier run, whatever version of the benchmark wrote them:
    // it reads them as `any` and prints what is there (its faults section too). The bench's generator edits the
    // example manifests, parsed from YAML, as plain JSON.
    files: ['bench/rush/report.ts', 'bench/rush/faults-report.ts', 'bench/server/generate.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // Plain JavaScript (scripts/*.mjs, the rush's preload, this file): not in tsconfig.json, so no type information.
    files: ['**/*.mjs', '**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  ...layers,
)
