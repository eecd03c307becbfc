/**
 * Author preview: what a Challenge would get from a ChallengeDefinition, without a cluster. It runs the same
 * pure sync as the server as Metacontroller would: the first sync, the one after its children were created (every
 * child, the Pod included: Pending), and one as if the cluster had made the pod ready long enough ago for its
 * endpoint to have settled (Running, with the endpoint players would see).
 *
 *   npm run render -- manifests/examples/web-login.yaml manifests/examples/web-login.yaml
 */
import { parseArgs } from 'node:util'
import type { ErrorObject } from 'ajv'
import { parseAllDocuments, stringify } from 'yaml'
import { CHILD_GROUPS } from './contract/api.js'
import { sync } from './challenge/hooks.js'
import { ROUTE_KINDS, routeGroup } from './challenge/traffic-routes.js'
import { INTERNET_WITHOUT_CLUSTER_CIDRS, loadConfig, type Config } from './config/config.js'
import { ChallengeObjectSchema, type KubeObject, type SyncRequest, type SyncResponse } from './contract/protocol.js'
import { schemaError } from './challenge/schema-errors.js'
import { compileSchema, DESCRIBED_OPTIONS } from './contract/validator.js'

export interface PreviewOptions {
  config: Config
  now: Date
}

export interface Preview {
  /**
   * The instance as created: every child Metacontroller would create (the Pod comes at the second sync, once the
   * flag Secret and the NetworkPolicies exist), and the status (Pending, or an Error).
   */
  first: SyncResponse
  /**
   * The sync after the pod became ready (ENDPOINT_SETTLE_MS ago), the Service got its address (NodePort 30000, LB
   * 192.0.2.1) and a Gateway accepted the route.
   */
  running: SyncResponse
  /** What the author or operator should know before running it (e.g. Internet egress without CLUSTER_CIDRS). */
  warnings: string[]
}

type Json = Record<string, unknown>

function grouped(objects: readonly Json[], always: readonly string[]): Record<string, Record<string, KubeObject>> {
  const groups: Record<string, Record<string, KubeObject>> = {}
  for (const key of always) groups[key] = {}
  for (const object of objects) {
    const key = `${String(object.kind)}.${String(object.apiVersion)}`
    const metadata = object.metadata as { name: string }
    ;(groups[key] ??= {})[metadata.name] = object as KubeObject
  }
  return groups
}

/** A cluster with every routing component installed: the preview shows the route of whatever routing is configured. */
const PREVIEW_CHILD_GROUPS = [...CHILD_GROUPS, ...ROUTE_KINDS.map(routeGroup)]

/** A child as Metacontroller creates it: in the namespace, owned by the Challenge (the hook counts no other). */
function asCreated(child: Json, parent: Json): Json & { metadata: Json; spec?: Json } {
  const created = structuredClone(child) as Json & { metadata: Json; spec?: Json }
  const { name, namespace, uid } = parent.metadata as { name: string; namespace: string; uid: string }
  const owner = {
    apiVersion: parent.apiVersion,
    kind: 'Challenge',
    name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  }
  created.metadata = { ...created.metadata, namespace, generation: 1, ownerReferences: [owner] }
  return created
}

/** A pod's status once its containers run and its readiness probe passes, since `since`. */
function readyPodStatus(pod: Json, since: string): Json {
  const containers = (pod.spec as { containers: { name: string }[] }).containers.map(({ name }) => ({
    name,
    ready: true,
    started: true,
    restartCount: 0,
    state: { running: { startedAt: since } },
  }))
  const conditions = ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
    type,
    status: 'True',
    lastTransitionTime: since,
  }))
  return { phase: 'Running', conditions, containerStatuses: containers }
}

/**
 * The cluster's side, roughly: the pod ready since `readySince`, ports and load-balancer address allocated, the
 * route accepted.
 */
function asObservedReady(child: Json, parent: Json, readySince: string): Json {
  const observed = asCreated(child, parent)
  if (child.kind === 'Pod') observed.status = readyPodStatus(observed, readySince)
  if (child.kind === 'Service') {
    const spec = observed.spec as { type: string; ports: Json[] }
    if (spec.type !== 'ClusterIP') spec.ports = spec.ports.map((port) => ({ ...port, nodePort: 30000 }))
    if (spec.type === 'LoadBalancer') observed.status = { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } }
  }
  if (child.kind === 'HTTPRoute' || child.kind === 'TLSRoute') {
    const { parentRefs } = observed.spec as { parentRefs: Json[] }
    const accepted = (type: string) => ({ type, status: 'True', reason: type, message: '', observedGeneration: 1 })
    observed.status = {
      parents: parentRefs.map((parentRef) => ({
        parentRef,
        controllerName: 'preview',
        conditions: [accepted('Accepted'), accepted('ResolvedRefs')],
      })),
    }
  }
  return observed
}

export class PreviewError extends Error {}

/** Fills in what the API server would (namespace, uid, labels, CRD defaults) so a bare example works. */
function asStored(challenge: Json, definition: Json, now: Date): Json {
  const metadata = { ...(challenge.metadata as Json) }
  const spec = { ...(challenge.spec as Json) }
  const owner = spec.owner as { id?: unknown } | undefined
  const definitionRef = spec.definitionRef as { name?: unknown } | undefined
  metadata.namespace ??= (definition.metadata as Json | undefined)?.namespace ?? 'default'
  metadata.uid ??= '00000000-0000-0000-0000-000000000000'
  metadata.creationTimestamp ??= now.toISOString()
  metadata.labels ??= {
    'challenge-hooks.dev/owner': String(owner?.id),
    'challenge-hooks.dev/definition': String(definitionRef?.name),
  }
  return { ...challenge, metadata, spec }
}

export function preview(definition: Json, challenge: Json, options: PreviewOptions): Preview {
  const parent = asStored(challenge, definition, options.now)
  const check = compileSchema(ChallengeObjectSchema, DESCRIBED_OPTIONS)
  if (!check(parent)) {
    const error = schemaError(check.errors as ErrorObject[])
    throw new PreviewError(`the Challenge is invalid: ${error.path} ${error.message}`)
  }
  const namespace = (parent.metadata as { namespace: string }).namespace
  const related = grouped([{ ...definition, metadata: { ...(definition.metadata as Json), namespace } }], [])
  const request = (children: Json[], status?: unknown): SyncRequest => ({
    parent: { ...parent, ...(status ? { status } : {}) } as SyncRequest['parent'],
    children: grouped(children, PREVIEW_CHILD_GROUPS),
    related,
    finalizing: false,
  })
  // The first sync asks for the flag Secret and the policies; the Pod comes once they are the instance's own.
  const created = sync(request([]), options.config, options.now)
  const first = sync(
    request(
      created.children.map((child) => asCreated(child, parent)),
      created.status,
    ),
    options.config,
    options.now,
  )
  const readySince = new Date(options.now.getTime() - options.config.endpointSettleMs).toISOString()
  const observed = first.children.map((child) => asObservedReady(child, parent, readySince))
  const running = sync(request(observed, first.status), options.config, options.now)
  const egress = ((definition.spec as Json | undefined)?.network as Json | undefined)?.egress
  const warnings =
    egress === 'Internet' && options.config.clusterCidrs.length === 0 ? [INTERNET_WITHOUT_CLUSTER_CIDRS] : []
  return { first, running, warnings }
}

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
