// The route children against the real CRDs: Gateway API's standard channel (HTTPRoute, TLSRoute, Gateway) and
// Traefik's (IngressRoute, IngressRouteTCP, TLSStore), read from the Go module cache when it holds the pinned
// releases (`go mod download sigs.k8s.io/gateway-api@v1.6.3 github.com/traefik/traefik/v3@v3.7.13`); skipped
// with the reason otherwise. Nothing of them is committed.
//
// - every route of every routing choice is valid against its CRD's OpenAPI schema (unknown fields refused);
// - the CEL rules (x-kubernetes-validations) that apply to the fields a route sets are exactly the ones checked
//   by hand below, so a new rule in a later release fails here instead of in a cluster;
// - the status a gateway controller writes (the simulator's, which tests also write by hand) is valid;
// - the Gateway and the TLSStore of docs/examples/routing/ (docs/routing.md links them) are valid.
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import t from 'tap'
import { parseAllDocuments } from 'yaml'
import type { DesiredChild } from '../../src/contract/protocol.js'
import { routeParentStatus } from '../support/simulator/gateways.js'
import {
  loadCrdSchema,
  readYamlDocuments,
  ROUTING_EXAMPLES,
  validateAgainstCrd,
  type Schema,
} from '../helpers/manifests.js'
import { CRD_FILES, missingCrds, routeChildren as routes } from '../support/route-crds.js'

const skip = missingCrds()

t.test('every route child is valid against its CRD (standard channel / Traefik v3)', { skip }, async (t) => {
  const children = routes()
  t.strictSame([...new Set(children.map((child) => child.kind))].sort(), [
    'HTTPRoute',
    'IngressRoute',
    'IngressRouteTCP',
    'TLSRoute',
  ])
  for (const child of children) {
    const file = CRD_FILES[child.kind] as string
    t.equal(
      child.apiVersion,
      `${child.apiVersion.split('/')[0]}/${storageVersion(file, child.kind)}`,
      `${child.kind}: the served storage version`,
    )
    t.strictSame(
      validateAgainstCrd(child.kind, child, { file }),
      [],
      `${child.kind} ${JSON.stringify(child.spec).slice(0, 80)}…`,
    )
  }
  // The schemas bite: a misspelt field, a passthrough that is not a boolean, a route without rules.
  const tls = structuredClone(children.find((child) => child.kind === 'TLSRoute')) as DesiredChild & {
    spec: Record<string, unknown>
  }
  tls.spec.rule = tls.spec.rules
  delete tls.spec.rules
  t.strictSame(validateAgainstCrd('TLSRoute', tls, { file: CRD_FILES.TLSRoute }), [
    "/spec must have required property 'rules'",
    '/spec must NOT have additional properties (rule)',
  ])
  const tcp = structuredClone(children.find((child) => child.kind === 'IngressRouteTCP')) as DesiredChild & {
    spec: { tls: Record<string, unknown> }
  }
  tcp.spec.tls.passthrough = 'false'
  t.strictSame(validateAgainstCrd('IngressRouteTCP', tcp, { file: CRD_FILES.IngressRouteTCP }), [
    '/spec/tls/passthrough must be boolean',
  ])
})

function storageVersion(file: string, kind: string): string {
  for (const document of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const crd = document.toJS() as {
      spec?: { names?: { kind?: string }; versions?: { name: string; storage: boolean }[] }
    } | null
    if (crd?.spec?.names?.kind === kind)
      return (crd.spec.versions ?? []).find((version) => version.storage)?.name ?? 'none'
  }
  return 'none'
}

// ---- CEL rules: the ones that apply to what a route sets, each checked by hand ----------------------------

const RFC_1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
type Json = Record<string, unknown>

/** What each rule asserts, for the value at the node that carries it (by the rule's message). */
const HAND_CHECKS: Record<string, (value: unknown) => boolean> = {
  'Hostnames cannot contain an IP': (hosts) => (hosts as string[]).every((host) => isIP(host) === 0),
  'Hostnames must be valid based on RFC-1123': (hosts) =>
    (hosts as string[]).every((host) => host.includes('*') || RFC_1123.test(host)),
  'Wildcards on hostnames must be the first label, and the rest of hostname must be valid based on RFC-1123': (hosts) =>
    (hosts as string[]).every((host) => !host.includes('*') || (host.startsWith('*.') && RFC_1123.test(host.slice(2)))),
  // Our routes name one parent: uniqueness holds trivially, and it is checked anyway.
  'sectionName must be specified when parentRefs includes 2 or more references to the same parent': (refs) =>
    (refs as Json[]).length === 1,
  'sectionName must be unique when parentRefs includes 2 or more references to the same parent': (refs) =>
    (refs as Json[]).length === 1,
  'Must have port for Service reference': (ref) => typeof (ref as Json).port === 'number',
  'While 16 rules and 64 matches per rule are allowed, the total number of matches across all rules in a route must be less than 128':
    (rules) =>
      (rules as Json[]).reduce((sum, rule) => sum + ((rule.matches as unknown[] | undefined)?.length ?? 1), 0) < 128,
  // HTTPRoute rules: the filter rules hold because our rules and their backendRefs carry no filters.
  'RequestRedirect filter must not be used together with backendRefs': noFilters,
  'When using RequestRedirect filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified':
    noFilters,
  'When using URLRewrite filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified':
    noFilters,
  'Within backendRefs, when using RequestRedirect filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified':
    noFilters,
  'Within backendRefs, When using URLRewrite filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified':
    noFilters,
}

function noFilters(rule: unknown): boolean {
  const { filters, backendRefs } = rule as { filters?: unknown; backendRefs?: Json[] }
  return filters === undefined && (backendRefs ?? []).every((ref) => ref.filters === undefined)
}

/** The CEL rules of the schema nodes that the value reaches, with the value each applies to. */
function celRules(
  schema: Schema,
  value: unknown,
  path = '',
): { path: string; message: string; rule: string; value: unknown }[] {
  const found = ((schema['x-kubernetes-validations'] ?? []) as { rule: string; message: string }[]).map((each) => ({
    path,
    ...each,
    value,
  }))
  if (Array.isArray(value) && schema.items !== undefined) {
    return [...found, ...value.flatMap((item, index) => celRules(schema.items as Schema, item, `${path}/${index}`))]
  }
  if (typeof value === 'object' && value !== null) {
    const properties = (schema.properties ?? {}) as Record<string, Schema>
    for (const [key, item] of Object.entries(value)) {
      if (properties[key] !== undefined) found.push(...celRules(properties[key], item, `${path}/${key}`))
    }
  }
  return found
}

t.test('the CEL rules on every field a route sets are known and hold', { skip }, async (t) => {
  const seen = new Set<string>()
  for (const child of routes()) {
    const schema = loadCrdSchema(child.kind, CRD_FILES[child.kind])
    for (const { path, message, rule, value } of celRules(schema, child)) {
      const check = HAND_CHECKS[message]
      if (check === undefined) {
        t.fail(`${child.kind}${path}: a CEL rule this test does not check: ${message} (${rule})`)
        continue
      }
      seen.add(message)
      t.ok(check(value), `${child.kind}${path}: ${message}`)
    }
  }
  t.strictSame([...seen].sort(), Object.keys(HAND_CHECKS).sort(), 'every hand check met its rule')
})

t.test('the route status a gateway controller writes is valid for the CRDs', { skip }, async (t) => {
  for (const child of routes().filter((each) => each.kind === 'HTTPRoute' || each.kind === 'TLSRoute')) {
    const object = { ...child, metadata: { ...child.metadata, generation: 3 } }
    const parentRef = (child.spec as { parentRefs: { name: string }[] }).parentRefs[0] as { name: string }
    for (const input of [
      { accepted: true, resolvedRefs: true },
      { accepted: 'NotAllowedByListeners', resolvedRefs: 'BackendNotFound', message: 'no' },
    ] as const) {
      const status = { parents: [routeParentStatus(object, parentRef, input, '2026-11-22T12:00:00Z')] }
      t.strictSame(
        validateAgainstCrd(child.kind, status, { file: CRD_FILES[child.kind], at: 'status' }),
        [],
        `${child.kind} status ${JSON.stringify(input)}`,
      )
    }
  }
})

t.test('the Gateway and the TLSStore of docs/examples/routing/ are valid', { skip }, async (t) => {
  const shown = Object.values(ROUTING_EXAMPLES).flatMap((file) => readYamlDocuments(file) as Json[])
  for (const kind of ['Gateway', 'TLSStore']) {
    const object = shown.find((each) => each?.kind === kind)
    t.ok(object, `docs/examples/routing/ holds a ${kind}`)
    t.strictSame(validateAgainstCrd(kind, object, { file: CRD_FILES[kind] }), [], kind)
  }
})
