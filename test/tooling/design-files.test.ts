// docs/design.md's table of the code names every file of src/ and no file that is not there: a file added, moved or
// removed without its row fails here. A cell names files as `src/<dir>/<file>.ts`, a later one of the same folder
// by its name alone (`instance-metrics.ts`), or a folder (`src/gateway/page/`) for every file in it.
import { readdirSync, readFileSync } from 'node:fs'
import { join, posix } from 'node:path'
import t from 'tap'

const root = join(import.meta.dirname, '../..')

/** Every .ts file under src/, as a path from the repository's root. */
function sourceFiles(dir = 'src'): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(`${dir}/${entry.name}`)
      : entry.name.endsWith('.ts')
        ? [`${dir}/${entry.name}`]
        : [],
  )
}

/** The files and folders the first cells of design.md's tables name. */
function namedInDesign(markdown: string): { files: string[]; folders: string[] } {
  const files: string[] = []
  const folders: string[] = []
  for (const line of markdown.split('\n')) {
    const cell = /^\| ([^|]+) \|/.exec(line)?.[1]
    if (cell === undefined) continue
    let folder: string | undefined
    for (const [, name = ''] of cell.matchAll(/`([^`]+)`/g)) {
      if (name.startsWith('src/') && name.endsWith('/')) folders.push(name)
      else if (name.startsWith('src/') && name.endsWith('.ts')) {
        files.push(name)
        folder = posix.dirname(name)
      } else if (name.endsWith('.ts') && folder !== undefined) files.push(`${folder}/${name}`)
    }
  }
  return { files, folders }
}

t.test('the reading of a cell', async (t) => {
  t.strictSame(
    namedInDesign(
      [
        '| file | what |',
        '| `src/http/metrics.ts`, `ops.ts` | x |',
        '| `src/gateway/page/` | y |',
        '| `src/a.ts`, `src/b/c.ts`, `d.ts` | z |',
        '| `nothing.ts` | a name before any path |',
        '| text | `src/in-the-second-cell.ts` |',
      ].join('\n'),
    ),
    {
      files: ['src/http/metrics.ts', 'src/http/ops.ts', 'src/a.ts', 'src/b/c.ts', 'src/b/d.ts'],
      folders: ['src/gateway/page/'],
    },
  )
})

t.test("design.md's table names every file of src/, and only those", async (t) => {
  const { files, folders } = namedInDesign(readFileSync(join(root, 'docs/design.md'), 'utf8'))
  const sources = sourceFiles()
  const covered = (file: string) => files.includes(file) || folders.some((folder) => file.startsWith(folder))
  t.strictSame(
    sources.filter((file) => !covered(file)),
    [],
    'every file of src/ has its row in docs/design.md ("The code")',
  )
  t.strictSame(
    [...files, ...folders].filter((name) => !sources.some((file) => file === name || file.startsWith(name))),
    [],
    'every file docs/design.md names exists',
  )
})
