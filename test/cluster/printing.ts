// `kubectl get chal` as an operator reads it: every printer column of the CRD printed readably. A cell may not be
// `<invalid>` (kubectl prints a `date` column as an age, and a time in the future as `<invalid>`), and may not be
// empty or `<none>` where the object has a value at the column's path.
import type { Test } from 'tap'
import type { Kubectl } from '../support/kube/kubectl.js'
import type { Json } from '../support/kube/harness.js'

interface Column {
  name: string
  jsonPath: string
  priority?: number
}

/** Reads a simple JSONPath (`.status.endpoint.connection`) off an object. */
function at(object: Json, path: string): unknown {
  return path
    .split('.')
    .filter((part) => part !== '')
    .reduce<unknown>(
      (value, part) => (value !== null && typeof value === 'object' ? (value as Json)[part] : undefined),
      object,
    )
}

/** Splits kubectl's table into cells by the header's column starts (cells may hold spaces: "nc host port"). */
function table(output: string): Array<Record<string, string>> {
  const [header = '', ...rows] = output.trimEnd().split('\n')
  const starts = [...header.matchAll(/(\S+(?: \S+)*)/g)].map((match) => ({
    name: match[1] as string,
    start: match.index,
  }))
  return rows.map((row) =>
    Object.fromEntries(
      starts.map(({ name, start }, i) => [name, row.slice(start, starts[i + 1]?.start ?? row.length).trim()]),
    ),
  )
}

/**
 * Asserts `kubectl get <resource> -o wide` prints every column of every object readably. Returns the rows by the
 * object's name, for assertions on particular cells.
 */
export async function assertPrintable(
  t: Test,
  kubectl: Kubectl,
  resource: 'chal' | 'chaldef',
  ns: string,
  crd: Json,
): Promise<Record<string, Record<string, string>>> {
  const columns = ((((crd.spec as Json).versions as Json[])[0] as Json).additionalPrinterColumns ?? []) as Column[]
  const printed = await kubectl(['get', resource, '-n', ns, '-o', 'wide'])
  const objects = JSON.parse((await kubectl(['get', resource, '-n', ns, '-o', 'json'])).stdout) as { items: Json[] }
  t.equal(printed.stderr, '', `kubectl get ${resource}: no warning`)
  const rows = table(printed.stdout)
  const byName: Record<string, Record<string, string>> = {}
  for (const row of rows) byName[row.NAME as string] = row
  for (const object of objects.items) {
    const name = (object.metadata as Json).name as string
    const row = byName[name]
    if (row === undefined) {
      t.fail(`${name} is printed`)
      continue
    }
    for (const column of columns) {
      const cell = row[column.name.toUpperCase()]
      const value = at(object, column.jsonPath)
      const label = `${resource} ${name}, column ${column.name} (${column.jsonPath}): "${cell}"`
      t.not(cell, '<invalid>', `${label}: not <invalid>`)
      if (value !== undefined && value !== '')
        t.ok(cell !== undefined && cell !== '' && cell !== '<none>', `${label}: shows the value`)
    }
  }
  return byName
}
