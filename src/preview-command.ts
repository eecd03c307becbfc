/**
 * The author preview's command (`challenge-hooks render <definition.yaml> <challenge.yaml> [--json]`): its
 * arguments, the YAML files it reads and the text it prints. What the hook would answer is ./preview.ts's.
 */
import { parseArgs } from 'node:util'
import { parseAllDocuments, stringify } from 'yaml'
import { loadConfig } from './config/config.js'
import { preview, PreviewError, type Preview } from './preview.js'

type Json = Record<string, unknown>

/** Reads the one document of the given kind from a YAML file's text. */
export function documentOfKind(text: string, kind: string, file: string): Json {
  // An empty text is an EmptyStream: an empty array.
  for (const document of parseAllDocuments(text)) {
    if (document.errors.length > 0) throw new PreviewError(`${file}: ${document.errors[0]?.message}`)
    const value = document.toJS() as unknown
    if (typeof value === 'object' && value !== null && (value as Json).kind === kind) return value as Json
  }
  throw new PreviewError(`${file}: no ${kind} document`)
}

export interface CliIo {
  readFile(path: string): string
  stdout: { write(text: string): unknown }
  stderr: { write(text: string): unknown }
  env: Record<string, string | undefined>
  now: () => Date
}

const USAGE = `usage: challenge-hooks render <definition.yaml> <challenge.yaml> [--json]

Prints the children and status a Challenge would get from the hook, without a cluster:
first as created (Pending), then as the player sees it once the workload is ready (Running).
Configuration comes from the same environment variables as the server (BASE_DOMAIN, PUBLIC_HOST, ...).
`

/** The command; returns the exit code (0 ok, 1 the inputs are wrong or the definition is refused, 2 usage). */
export function runCli(argv: readonly string[], io: CliIo): number {
  let parsed: { values: { json?: boolean }; positionals: string[] }
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { json: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    })
  } catch (error) {
    io.stderr.write(`challenge-hooks render: ${(error as Error).message}\n${USAGE}`)
    return 2
  }
  const { values, positionals } = parsed
  if (positionals[0] !== 'render' || positionals.length !== 3) {
    io.stderr.write(USAGE)
    return 2
  }
  const [, definitionFile, challengeFile] = positionals as [string, string, string]
  const json = values.json === true
  try {
    const definition = documentOfKind(io.readFile(definitionFile), 'ChallengeDefinition', definitionFile)
    const challenge = documentOfKind(io.readFile(challengeFile), 'Challenge', challengeFile)
    const result = preview(definition, challenge, { config: loadConfig(io.env), now: io.now() })
    io.stdout.write(json ? `${JSON.stringify(result, null, 2)}\n` : formatPreview(result))
    return result.first.status.phase === 'Error' ? 1 : 0
  } catch (error) {
    io.stderr.write(`challenge-hooks render: ${(error as Error).message}\n`)
    return 1
  }
}

export function formatPreview(result: Preview): string {
  const { first, running } = result
  const lines = [
    ...result.warnings.map((warning) => `# Warning: ${warning}`),
    `# First sync: ${String(first.status.phase)} / ${String(first.status.reason)}: ${String(first.status.message)}`,
    `# ${first.children.length} children to create`,
    stringify({ status: first.status }),
  ]
  for (const child of first.children) lines.push('---', stringify(child))
  if (first.status.phase !== 'Error') {
    lines.push(
      '---',
      `# Once the workload is ready: ${String(running.status.phase)} / ${String(running.status.reason)}`,
      stringify({ status: running.status }),
    )
  }
  return `${lines.join('\n').trimEnd()}\n`
}
