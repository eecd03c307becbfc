/**
 * What every answer of the hook server must be, whatever the request: never a 5xx; a 4xx is a JSON
 * `{error, message}`; a 200 is a Metacontroller answer whose status the Challenge CRD accepts and whose children
 * the API server would accept (kubernetes-models' OpenAPI validation).
 */
import { validateChild } from '../helpers/validate.js'
import { validateAgainstCrd } from '../helpers/manifests.js'

type Loose = Record<string, unknown>

const SYNC_KEYS = new Set(['status', 'children', 'resyncAfterSeconds', 'finalized'])
/** Metacontroller owns these; a child that carries them is refused or fights the controller. */
const SYSTEM_METADATA = [
  'uid',
  'resourceVersion',
  'ownerReferences',
  'managedFields',
  'creationTimestamp',
  'deletionTimestamp',
  'generation',
]
const INTEGER_FIELDS = ['run', 'renewalsSeen', 'renewalsApplied']

function isObject(value: unknown): value is Loose {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function parse(body: string): unknown {
  try {
    return JSON.parse(body)
  } catch {
    return undefined
  }
}

/** Observed children of the request with this kind (or none, when the object has none) and name. */
function observedCopies(request: unknown, kind: unknown, name: unknown): Loose[] {
  const groups = isObject(request) ? request.children : undefined
  if (!isObject(groups)) return []
  return Object.values(groups)
    .flatMap((group) => (isObject(group) ? Object.values(group) : []))
    .filter((object): object is Loose => isObject(object) && isObject(object.metadata) && object.metadata.name === name)
    .filter((object) => object.kind === kind)
}

function modelProblem(object: Loose): string | undefined {
  try {
    validateChild(object)
    return undefined
  } catch (error) {
    return (error as Error).message
  }
}

/**
 * Teardown keeps observed children as they are (minus status and system metadata). An observed child the API
 * server could never have returned (a fuzzed one) comes back as invalid as it went in: that is no fault of the
 * answer, so a problem the observed copy already has is not counted.
 */
function childProblems(child: unknown, index: number, request: unknown): string[] {
  if (!isObject(child)) return [`children[${index}] is ${JSON.stringify(child)}, not an object`]
  const metadata = child.metadata
  const name = isObject(metadata) ? metadata.name : undefined
  const where = `children[${index}] ${String(child.kind)} ${String(name)}`
  const observed = observedCopies(request, child.kind, name)
  const problems: string[] = []
  const missing = (object: Loose, field: 'apiVersion' | 'kind') =>
    typeof object[field] !== 'string' || object[field] === ''
  for (const field of ['apiVersion', 'kind'] as const) {
    if (missing(child, field) && !observed.some((copy) => missing(copy, field))) problems.push(`${where}: no ${field}`)
  }
  if (typeof name !== 'string' || name === '') problems.push(`${where}: no metadata.name`)
  else
    for (const field of SYSTEM_METADATA)
      if (field in (metadata as Loose)) problems.push(`${where}: carries metadata.${field}`)
  if ('status' in child) problems.push(`${where}: carries status`)
  const invalid = modelProblem(child)
  if (invalid !== undefined && !observed.some((copy) => modelProblem(copy) !== undefined))
    problems.push(`${where}: ${invalid}`)
  return problems
}

function statusProblems(status: unknown, children: unknown[]): string[] {
  if (!isObject(status)) return ['status is not an object']
  const problems = validateAgainstCrd('Challenge', status, { at: 'status' }).map((error) => `status${error}`)
  for (const field of INTEGER_FIELDS) {
    // The CRD says integer; the API server stores int64, and the hook reads back only safe integers.
    if (!Number.isSafeInteger(status[field]))
      problems.push(`status.${field} is ${JSON.stringify(status[field])}, not a safe integer`)
  }
  const types = Array.isArray(status.conditions) ? status.conditions.map((each: Loose) => each.type) : []
  if (new Set(types).size !== types.length)
    problems.push(`status.conditions repeat a type (a list-map keyed by type): ${types.join(',')}`)
  const text = JSON.stringify(status)
  for (const child of children) {
    const flag = isObject(child) && child.kind === 'Secret' && isObject(child.data) ? child.data.flag : undefined
    if (typeof flag !== 'string' || flag === '') continue
    if (text.includes(flag) || text.includes(Buffer.from(flag, 'base64').toString('utf8')))
      problems.push('status contains the flag')
  }
  return problems
}

/** Everything wrong with one answer to `request` (parsed, or undefined); [] when it is what the contract promises. */
export function answerProblems(url: string, statusCode: number, body: string, request: unknown): string[] {
  if (statusCode >= 500) return [`${statusCode}: ${body.slice(0, 300)}`]
  const parsed = parse(body)
  if (statusCode >= 400) {
    if (!isObject(parsed) || typeof parsed.error !== 'string' || typeof parsed.message !== 'string') {
      return [`${statusCode} without a JSON {error, message}: ${body.slice(0, 300)}`]
    }
    return []
  }
  if (statusCode !== 200) return [`unexpected status ${statusCode}`]
  if (!isObject(parsed)) return [`200 that is not a JSON object: ${body.slice(0, 300)}`]
  if (url === '/customize') {
    const rules = parsed.relatedResources
    if (Object.keys(parsed).join() !== 'relatedResources' || !Array.isArray(rules))
      return ['customize answer is not {relatedResources: [...]}']
    return rules.flatMap((rule: unknown, index) =>
      isObject(rule) && typeof rule.apiVersion === 'string' && typeof rule.resource === 'string'
        ? []
        : [`relatedResources[${index}] is malformed`],
    )
  }
  const problems: string[] = []
  const extra = Object.keys(parsed).filter((key) => !SYNC_KEYS.has(key))
  if (extra.length > 0) problems.push(`top-level fields ${extra.join(', ')} (v2 strict unmarshalling refuses them)`)
  if (!Array.isArray(parsed.children))
    return [...problems, 'children is not an array (Metacontroller would delete every child)']
  problems.push(...parsed.children.flatMap((child: unknown, index) => childProblems(child, index, request)))
  problems.push(...statusProblems(parsed.status, parsed.children))
  // finalized answers a finalizing call, whichever URL it came to (one URL may serve both hooks), and nothing else.
  const finalizing = isObject(request) && request.finalizing === true
  if ('finalized' in parsed !== finalizing || ('finalized' in parsed && typeof parsed.finalized !== 'boolean')) {
    problems.push(
      `finalized ${String(parsed.finalized)} from ${url} to a call with finalizing ${String(isObject(request) && request.finalizing)}`,
    )
  }
  if (finalizing && isObject(parsed.status) && parsed.status.phase !== 'Terminating')
    problems.push(`phase ${String(parsed.status.phase)} while finalizing`)
  if ('resyncAfterSeconds' in parsed) {
    const seconds = parsed.resyncAfterSeconds
    if (typeof seconds !== 'number' || !(seconds > 0) || !Number.isFinite(seconds))
      problems.push(`resyncAfterSeconds ${String(seconds)}`)
  }
  return problems
}
