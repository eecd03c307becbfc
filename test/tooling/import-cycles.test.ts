// No import cycle in src/: every file of a layer can be loaded, read and tested without the ones that import it,
// and the order in which modules start is the order of the layers. CI runs this file with the fast suite, so a
// cycle fails it. The finder itself (./import-graph.ts) is checked first on folders written here.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import t, { type Test } from 'tap'
import { repoRoot } from '../support/kube/controlplane.js'
import { cycles, importGraph } from './import-graph.js'

/** A folder `src/` of these files (path → text) in a fresh directory; removed at the end of the test. */
function tree(t: Test, files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'import-cycles-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, dirname(path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}

t.test(
  'the finder: each cycle once, whatever file it is entered from; type-only and re-exporting imports count',
  async (t) => {
    const root = tree(t, {
      'src/a.ts': "import { b } from './b.js'\nexport const a = b",
      'src/b.ts': "import type { C } from './deep/c.js'\nexport const b = 1",
      'src/deep/c.ts': "export { a } from '../a.js'\nexport type C = number",
      'src/d.ts': "import { a } from './a.js'\nimport { e } from './e.js'\nexport const d = a",
      'src/e.ts': "export const e = await import('./e.js')",
      'src/f.ts':
        "import { readFileSync } from 'node:fs'\nimport data from './data.json'\nexport const f = readFileSync",
      'src/g.ts': "import { h } from './h.js'\nexport const g = 1",
      'src/h.ts': "import { g } from './g.js'\nexport const h = 1",
    })
    const graph = importGraph(root, 'src')
    t.strictSame(Object.fromEntries(graph), {
      'src/a.ts': ['src/b.ts'],
      'src/b.ts': ['src/deep/c.ts'],
      'src/d.ts': ['src/a.ts', 'src/e.ts'],
      'src/deep/c.ts': ['src/a.ts'],
      'src/e.ts': ['src/e.ts'],
      'src/f.ts': [],
      'src/g.ts': ['src/h.ts'],
      'src/h.ts': ['src/g.ts'],
    })
    t.strictSame(cycles(graph), [['src/a.ts', 'src/b.ts', 'src/deep/c.ts'], ['src/e.ts'], ['src/g.ts', 'src/h.ts']])
    t.strictSame(
      cycles(
        importGraph(tree(t, { 'src/a.ts': "import { b } from './b.js'", 'src/b.ts': 'export const b = 1' }), 'src'),
      ),
      [],
      'a chain is no cycle',
    )
  },
)

t.test('src/ has no import cycle', async (t) => {
  const graph = importGraph(repoRoot, 'src')
  // The graph is the real one: the process entries reach every layer, and the layers their next ones.
  const folders = new Set([...graph.keys()].filter((file) => file.split('/').length > 2).map((file) => dirname(file)))
  t.strictSame([...folders].sort(), [
    'src/challenge',
    'src/config',
    'src/contract',
    'src/gateway',
    'src/gateway/page',
    'src/http',
    'src/http/routes',
  ])
  t.strictSame(graph.get('src/server.ts'), ['src/main.ts'])
  t.strictSame(graph.get('src/contract/protocol.ts'), ['src/contract/api.ts', 'src/contract/patterns.ts'])
  t.strictSame(graph.get('src/http/metrics.ts'), [
    'src/challenge/images.ts',
    'src/http/instance-metrics.ts',
    'src/http/reason-label.ts',
  ])
  t.strictSame(cycles(graph), [])
})
