/**
 * The copies of src/config/config.ts's table: docs/configuration.md, and the comments of manifests/config.env (whose
 * values stay the install's choice). `npm run write:config-docs` (scripts/config-docs.ts) writes both;
 * test/http/config-docs.test.ts fails when either differs from what these functions render.
 */
import { GROUPS, RULES, VARIABLES, type Variable } from './config.js'
import { GATEWAY_VARIABLES } from './config-gateway.js'
import { EX_CONFIG, type Parser } from './config-parsers.js'

type Name = keyof typeof VARIABLES

const GENERATED = 'Generated from the table in src/config/config.ts by `npm run write:config-docs`'

function variables(): [Name, Variable<unknown>][] {
  return Object.entries(VARIABLES) as [Name, Variable<unknown>][]
}

/** The default as the docs show it. */
function shownDefault(variable: Variable<unknown>): string {
  return variable.default ?? variable.parser.shown ?? 'unset'
}

/** Markdown in a table cell: a line break or a pipe would end it. */
const cell = (text: string) => text.replace(/\n/g, ' ')
const sentence = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

/** docs/configuration.md. */
export function configurationPage(): string {
  const lines = [
    '# Configuration',
    '',
    `<!-- ${GENERATED}: edit the table, not this page (a test fails when they differ). -->`,
    '',
    'The hook server reads its configuration from environment variables, once, at start. A blank value (empty or',
    'spaces only) is the same as an unset one. A bad value stops the start with exit code',
    `${EX_CONFIG} and a message naming the variable:`,
    '',
    '```',
    'challenge-hooks: invalid configuration: OWNER_BUDGET: must be a whole number, got "lots"',
    '```',
    '',
    'In the install (`manifests/`), the Deployment sets `NODE_ENV`, `PORT`, `OPS_PORT` and `LOG_LEVEL`, the Secret',
    '`challenge-hooks-secrets` holds `FLAG_SECRET` and `HOOK_TOKEN`, and the settings an operator chooses are in',
    '`manifests/config.env` (the ConfigMap `challenge-hooks-config`), whose comments are generated from the same',
    'table. The routing components add their settings to that ConfigMap, and the `hook-tls` component sets',
    '`TLS_CERT_FILE` and `TLS_KEY_FILE`.',
    '',
  ]
  for (const [group, title] of Object.entries(GROUPS)) {
    lines.push(`## ${title}`, '', '| variable | default | accepts | meaning |', '|---|---|---|---|')
    for (const [name, variable] of variables().filter(([, v]) => v.group === group)) {
      lines.push(
        `| \`${name}\` | ${cell(shownDefault(variable))} | ${cell(variable.parser.accepts)} | ${cell(sentence(variable.meaning))} |`,
      )
    }
    lines.push('')
  }
  lines.push('## Rules across variables', '', 'Checked once every variable has been read, in this order:', '')
  for (const rule of RULES) lines.push(`- ${rule.says}`)
  lines.push('', ...gatewaySection())
  return lines.join('\n')
}

/** The gateway's variables (src/config/config-gateway.ts), read by another process with the same parsers. */
function gatewaySection(): string[] {
  const lines = [
    '## The gateway (`challenge-gateway`)',
    '',
    'The optional [gateway](gateway-api.md) is another process with a configuration of its own, read the same way (a bad',
    `value stops it with exit code ${EX_CONFIG}). In its component (\`manifests/components/gateway\`), \`gateway.env\` is the`,
    'ConfigMap `challenge-gateway-config`, and the Secret `challenge-gateway-secrets` holds the platforms file.',
    "`KUBECONFIG` (unset: the pod's ServiceAccount) names the API server it calls and the credentials.",
    '',
    '| variable | default | accepts | meaning |',
    '|---|---|---|---|',
  ]
  const entries = Object.entries(GATEWAY_VARIABLES) as [string, { parser: Parser<unknown>; meaning: string }][]
  for (const [name, variable] of entries)
    lines.push(
      `| \`${name}\` | ${cell(variable.parser.shown ?? 'unset')} | ${cell(variable.parser.accepts)} | ${cell(sentence(variable.meaning))} |`,
    )
  lines.push(
    '',
    '`GATEWAY_AUDIENCE` and `GATEWAY_PLATFORMS_FILE` are required; `FLAG_VERIFY_URL` and `FLAG_VERIFY_TOKEN` go together',
    '(one without the other stops the start), and `FLAG_VERIFY_URL` must be a URL.',
    '',
  )
  return lines
}

/** Markdown as plain text, for a comment. */
const plain = (text: string) => text.replace(/\*\*|`/g, '').replace(/\\\|/g, '|')

/** `text` as `# ` comment lines of at most 79 characters. */
function comment(text: string): string[] {
  const lines: string[] = []
  let line = '#'
  for (const word of text.split(/\s+/)) {
    if (line.length + 1 + word.length > 79 && line !== '#') {
      lines.push(line)
      line = '#'
    }
    line += ` ${word}`
  }
  lines.push(line)
  return lines
}

/** A line of config.env that sets a variable, or leaves it commented out: `NAME=value` or `#NAME=value`. */
const ASSIGNMENT = /^(#?)([A-Z][A-Z0-9_]*)=(.*)$/

/**
 * manifests/config.env: its variables and values as `current` has them (set or commented out), in the table's
 * order, each with its comment from the table. A line that sets a variable the table does not have is an error.
 */
export function configEnv(current: string): string {
  const assignments = new Map<string, string>()
  for (const line of current.split('\n')) {
    const match = ASSIGNMENT.exec(line)
    if (match === null) continue
    const [, commented, name = '', value] = match
    if (!Object.hasOwn(VARIABLES, name))
      throw new Error(`manifests/config.env sets ${name}, which src/config/config.ts does not read`)
    assignments.set(name, `${commented}${name}=${value}`)
  }
  const lines = [
    ...comment(
      "Settings of the hook server (not secret). kustomize turns this file into the ConfigMap challenge-hooks-config; a change rolls the Deployment (the ConfigMap's name carries a content hash). Leave a variable commented out to keep the server's default (it reads a blank value as unset too).",
    ),
    '#',
    ...comment(
      `${plain(GENERATED)}: edit the values here, the comments there. Every variable, its default and what it accepts: docs/configuration.md.`,
    ),
  ]
  for (const [group, title] of Object.entries(GROUPS)) {
    const names = variables().filter(([name, v]) => v.group === group && assignments.has(name))
    if (names.length === 0) continue
    lines.push('', `# --- ${title} ---`)
    for (const [name, variable] of names) {
      lines.push(
        '',
        ...comment(
          `${name}: ${plain(variable.meaning)}. Accepts ${plain(variable.parser.accepts)}; default: ${plain(shownDefault(variable))}.`,
        ),
        assignments.get(name) as string,
      )
    }
  }
  return `${lines.join('\n')}\n`
}
