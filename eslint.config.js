// ESLint (npm run lint): the recommended rules of ESLint and typescript-eslint, type-aware (the type checker's view
// through tsconfig.json, which covers src/, test/, bench/ and scripts/), over every TypeScript and JavaScript file
// of those directories. Formatting is Prettier's (.prettierrc), not ESLint's. `.ci/run` runs it as a suite: any
// finding fails CI. Every rule turned off or narrowed below says why.
import js from '@eslint/js'
import globals from 'globals'
import tseslint from 'typescript-eslint'

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
    // it reads them as `any` and prints what is there. The bench's generator edits the example manifests, parsed
    // from YAML, as plain JSON.
    files: ['bench/rush/report.ts', 'bench/generate.ts'],
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
)
