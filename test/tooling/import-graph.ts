/**
 * The import graph of a folder of TypeScript, and its cycles. The imports are read by TypeScript's own scanner
 * (`preProcessFile`: every `import`, `import type`, `export … from` and `import()`), the relative ones resolved as
 * NodeNext does for this project (`./x.js` is the file `./x.ts`). A cycle is a strongly connected component (Tarjan):
 * files that each reach every other through imports, or a file that imports itself.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'

/** Each .ts file under `dir`, with the files under `dir` it imports; every path relative to `root`, sorted. */
export function importGraph(root: string, dir: string): Map<string, string[]> {
  const files = readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(dir, name))
    .sort()
  const known = new Set(files)
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(root, file), 'utf8'), true, true)
    const targets = importedFiles
      .map(({ fileName }) => fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => relative(root, resolve(root, dirname(file), name.replace(/\.js$/, '.ts'))))
      .filter((target) => known.has(target))
    graph.set(file, [...new Set(targets)].sort())
  }
  return graph
}

/** The cycles of `graph`: each one's files sorted, the cycles sorted by their first file. */
export function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (file: string): void => {
    index.set(file, next)
    low.set(file, next)
    next += 1
    stack.push(file)
    onStack.add(file)
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!))
      }
    }
    if (low.get(file) !== index.get(file)) return
    const component: string[] = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      component.push(member)
    } while (member !== file)
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) found.push(component.sort())
  }
  for (const file of graph.keys()) if (!index.has(file)) visit(file)
  return found.sort((a, b) => a[0]!.localeCompare(b[0]!))
}
