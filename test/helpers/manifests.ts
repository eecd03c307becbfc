// Shared helpers for tests that read manifests/: YAML loading, and validation of
// objects against a CRD's openAPIV3Schema with ajv.
//
//   validateAgainstCrd('Challenge', challenge)           -> [] when valid
//   validateAgainstCrd('Challenge', status, { at: 'status' })
//
// Conversion from a Kubernetes structural schema to JSON Schema for ajv:
// `x-kubernetes-*` keywords are dropped (CEL rules cannot run here), `nullable`
// becomes a `null` type, `x-kubernetes-int-or-string` becomes integer|string,
// and an object that declares `properties` without keeping unknown fields gets
// `additionalProperties: false`. The API server would silently prune such an
// unknown field; here it is an error, so a status field the CRD forgot, or a
// misspelt field in a manifest, fails the test instead of vanishing.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import { parseAllDocuments } from 'yaml'

export type Schema = { [keyword: string]: unknown }

export interface ManifestObject {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace?: string; labels?: Record<string, string> }
  [field: string]: unknown
}

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
export const manifestsDir = join(repoRoot, 'manifests')
const crdsDir = join(manifestsDir, 'crds')
/** The Gateway and the TLSStore the routing docs tell the operator to apply (docs/routing.md). */
export const ROUTING_EXAMPLES = {
  Gateway: join(repoRoot, 'docs/examples/routing/gateway.yaml'),
  TLSStore: join(repoRoot, 'docs/examples/routing/tlsstore.yaml'),
} as const

/** Metacontroller's own CRDs (v4.17.2), vendored as test data: test/data/README.md says where they come from. */
export const METACONTROLLER_CRDS_FILE = join(repoRoot, 'test/data/metacontroller-crds-v1.yaml')

/** Metacontroller's CRDs (the vendored copy, or $METACONTROLLER_CRDS to try another release); undefined when absent. */
export function metacontrollerCrdsFile(): string | undefined {
  const file = process.env.METACONTROLLER_CRDS ?? METACONTROLLER_CRDS_FILE
  return existsSync(file) ? file : undefined
}

/** Every non-empty document of a (multi-document) YAML text; throws on a YAML error, naming source. */
export function parseYamlDocuments(text: string, source: string): unknown[] {
  const values: unknown[] = []
  for (const doc of parseAllDocuments(text)) {
    const [error] = doc.errors
    if (error !== undefined) throw new Error(`${source}: ${error.message}`)
    const value: unknown = doc.toJS()
    if (value !== null) values.push(value)
  }
  return values
}

/** Every non-empty document of a (multi-document) YAML file. */
export function readYamlDocuments(file: string): unknown[] {
  return parseYamlDocuments(readFileSync(file, 'utf8'), file)
}

/** The KEY=VALUE lines of a kustomize env file (comments and blank lines skipped). */
export function readEnvFile(file: string): Map<string, string> {
  const entries = new Map<string, string>()
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const text = line.trim()
    if (text === '' || text.startsWith('#')) continue
    const eq = text.indexOf('=')
    entries.set(text.slice(0, eq), text.slice(eq + 1))
  }
  return entries
}

/** Paths of all .yaml / .yml files under dir, recursively, sorted. */
export function listYamlFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.ya?ml$/.test(name))
    .map((name) => join(dir, name))
    .sort()
}

/**
 * Every Kubernetes object in every YAML file under dir (default manifests/), with the file
 * it came from; kustomization.yaml files are kustomize's input, not objects, and are left out.
 */
export function loadManifests(dir = manifestsDir): { file: string; object: ManifestObject }[] {
  return listYamlFiles(dir)
    .filter((file) => basename(file) !== 'kustomization.yaml')
    .flatMap((file) => readYamlDocuments(file).map((object) => ({ file, object: object as ManifestObject })))
}

/** openAPIV3Schema of the CRD whose spec.names.kind is kind, from file (default: our manifests/crds/). */
export function loadCrdSchema(kind: string, file?: string): Schema {
  const files = file === undefined ? listYamlFiles(crdsDir) : [file]
  for (const doc of files.flatMap(readYamlDocuments)) {
    const crd = doc as {
      kind?: string
      spec?: { names?: { kind?: string }; versions?: { schema?: { openAPIV3Schema?: Schema } }[] }
    }
    const schema = crd.spec?.versions?.[0]?.schema?.openAPIV3Schema
    if (crd.kind === 'CustomResourceDefinition' && crd.spec?.names?.kind === kind && schema !== undefined) return schema
  }
  throw new Error(`no CustomResourceDefinition for kind ${kind} in ${files.join(', ')}`)
}

const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** A structural Kubernetes schema as JSON Schema for ajv (see the header comment). */
export function toAjvSchema(schema: Schema): Schema {
  const out: Schema = {}
  for (const [keyword, value] of Object.entries(schema)) {
    if (keyword.startsWith('x-kubernetes-') || keyword === 'nullable') continue
    if (keyword === 'properties') {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, Schema>).map(([k, v]) => [k, toAjvSchema(v)]),
      )
    } else if (['items', 'additionalProperties', 'not'].includes(keyword) && isSchema(value)) {
      out[keyword] = toAjvSchema(value)
    } else if (['allOf', 'anyOf', 'oneOf'].includes(keyword)) {
      out[keyword] = (value as Schema[]).map(toAjvSchema)
    } else {
      out[keyword] = value
    }
  }
  if (schema['x-kubernetes-int-or-string'] === true) out.type = ['integer', 'string']
  if (schema.nullable === true && out.type !== undefined) out.type = [out.type, 'null'].flat()
  const keepsUnknown = schema['x-kubernetes-preserve-unknown-fields'] === true
  if (out.properties !== undefined && out.additionalProperties === undefined && !keepsUnknown)
    out.additionalProperties = false
  return out
}

const rfc3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/

const ajv = new Ajv({ strict: false, allErrors: true, logger: false })
ajv.addFormat('date-time', { type: 'string', validate: (s: string) => rfc3339.test(s) && !Number.isNaN(Date.parse(s)) })
ajv.addFormat('duration', /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/)
ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && Math.abs(n + 0.5) < 2 ** 31 })
ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) })

const compiled = new Map<string, ValidateFunction>()

function describe(error: ErrorObject): string {
  const extra = error.params.additionalProperty ?? error.params.allowedValues
  return `${error.instancePath === '' ? '/' : error.instancePath} ${String(error.message)}${extra === undefined ? '' : ` (${String(extra)})`}`
}

/**
 * Validate object against the openAPIV3Schema of the CRD for kind (CEL rules excepted).
 * `at` validates a part only, e.g. `{ at: 'status' }` for a hook's status; `file` reads
 * the CRD from another file (e.g. metacontrollerCrdsFile()). Returns readable errors, [] when valid.
 */
export function validateAgainstCrd(
  kind: string,
  object: unknown,
  options: { at?: string; file?: string } = {},
): string[] {
  const key = `${options.file ?? crdsDir}#${kind}#${options.at ?? ''}`
  let validate = compiled.get(key)
  if (validate === undefined) {
    const schema = loadCrdSchema(kind, options.file)
    const part =
      options.at === undefined ? schema : (schema.properties as Record<string, Schema> | undefined)?.[options.at]
    if (part === undefined) throw new Error(`the ${kind} schema has no top-level field ${options.at}`)
    validate = ajv.compile(toAjvSchema(part))
    compiled.set(key, validate)
  }
  return validate(object) ? [] : (validate.errors as ErrorObject[]).map(describe)
}

// ---- kustomize components (manifests/components/*), applied in-repo -----------------------------------------------
// The routing components patch the CompositeController and Metacontroller's ClusterRole with JSON 6902 `add`
// operations and merge settings into the hook server's ConfigMap. The tests apply them here, without kustomize,
// so every suite can run any routing choice; kustomization.test.ts checks the result against `kubectl kustomize`.

export const componentsDir = join(manifestsDir, 'components')

interface ComponentFile {
  kind: string
  patches?: { target: { group?: string; kind: string; name: string }; patch: string }[]
  configMapGenerator?: { name: string; behavior?: string; envs?: string[] }[]
}

function readComponent(name: string): ComponentFile {
  const component = readYamlDocuments(join(componentsDir, name, 'kustomization.yaml'))[0] as ComponentFile
  if (component.kind !== 'Component') throw new Error(`components/${name} is not a kustomize Component`)
  return component
}

/** JSON 6902 `add`: an object member, an array index, or `-` (the end of an array). */
function addAt(document: unknown, path: string, value: unknown): void {
  const tokens = path
    .split('/')
    .slice(1)
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'))
  const last = tokens.pop() as string
  let node = document as Record<string, unknown>
  for (const token of tokens) {
    const next = node[token]
    if (typeof next !== 'object' || next === null) throw new Error(`no ${token} on the way to ${path}`)
    node = next as Record<string, unknown>
  }
  if (!Array.isArray(node)) node[last] = value
  else if (last === '-') node.push(value)
  else node.splice(Number(last), 0, value)
}

/** Copies of `objects` with the components' patches applied, as kustomize would (a patch whose target is not among them is skipped). */
export function withComponents<T extends ManifestObject>(objects: readonly T[], components: readonly string[]): T[] {
  const result = structuredClone(objects) as T[]
  for (const name of components) {
    for (const { target, patch } of readComponent(name).patches ?? []) {
      const targets = result.filter(
        (object) =>
          object.kind === target.kind &&
          object.metadata.name === target.name &&
          (target.group === undefined || object.apiVersion.startsWith(`${target.group}/`)),
      )
      for (const operation of parseYamlDocuments(patch, `components/${name}`)[0] as {
        op: string
        path: string
        value: unknown
      }[]) {
        if (operation.op !== 'add')
          throw new Error(`components/${name}: only "add" operations are applied here, not ${operation.op}`)
        for (const object of targets) addAt(object, operation.path, structuredClone(operation.value))
      }
    }
  }
  return result
}

/** The settings the components merge into the hook server's ConfigMap (later components win, as in kustomize). */
export function componentSettings(components: readonly string[]): Record<string, string> {
  const settings: Record<string, string> = {}
  for (const name of components) {
    for (const generator of readComponent(name).configMapGenerator ?? []) {
      for (const file of generator.envs ?? [])
        Object.assign(settings, Object.fromEntries(readEnvFile(join(componentsDir, name, file))))
    }
  }
  return settings
}
