/**
 * Where the real server's CPU goes, from a V8 `.cpuprofile` (node --cpu-prof).
 *
 * Serving: each busy sample goes to the innermost frame of its stack that a rule names, and each stage is
 * marked as work the I/O baseline does too (reading the request, JSON.parse, writing the answer) or work beyond
 * it (validation, sync, serialisation, the framework, ...). Builtins such as JSON.parse and JSON.stringify have
 * no frame of their own: their time is the self time of their caller (secure-json-parse's `_parse`, the route's
 * `sendAnswer`).
 *
 * Start: inclusive time of the phases of a cold start (module loading, schema compilation, ...).
 */
import { existsSync, readFileSync } from 'node:fs'
import { SourceMap, type SourceMapPayload } from 'node:module'
import { dirname, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
  columnNumber: number
}

interface ProfileNode {
  id: number
  callFrame: CallFrame
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
  startTime: number
  endTime: number
}

export interface Stage {
  stage: string
  /** the I/O baseline does this too */
  shared: boolean
  share: number
}

export interface ProfileSummary {
  /** busy (non-idle) milliseconds sampled */
  busyMs: number
  /** share of busy time, largest first */
  stages: Stage[]
  /** hottest functions by self time, share of busy time */
  functions: Array<{ name: string; share: number }>
}

const SHARED = new Set([
  'JSON.parse (secure-json-parse `_parse`)',
  'node: HTTP parsing, sockets, streams, buffers (request read, answer write)',
  'V8 garbage collector',
  'V8 / native (program)',
])

/**
 * `dist/server.js` is one bundle (scripts/bundle.mjs): each of its frames is named again by the file it came from,
 * read from the bundle's source map, so that the stage rules see `src/challenge/…`, `node_modules/fastify/…` as
 * they would without the bundle (a file of ours is then named by its source under src/).
 */
function unbundle(frames: CallFrame[]): void {
  const maps = new Map<string, SourceMap | undefined>()
  for (const frame of frames) {
    if (!frame.url.endsWith('/dist/server.js')) continue
    if (!maps.has(frame.url)) {
      const mapFile = `${fileURLToPath(frame.url)}.map`
      maps.set(
        frame.url,
        existsSync(mapFile) ? new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8')) as SourceMapPayload) : undefined,
      )
    }
    const map = maps.get(frame.url)
    const entry = map?.findEntry(frame.lineNumber, frame.columnNumber)
    if (entry === undefined || !('originalSource' in entry)) continue
    const dist = dirname(fileURLToPath(frame.url))
    const source = resolve(dist, entry.originalSource)
    frame.url = pathToFileURL(source).href
    frame.lineNumber = entry.originalLine
  }
}

function read(file: string): { profile: CpuProfile; nodes: Map<number, ProfileNode>; parent: Map<number, number> } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
  unbundle(profile.nodes.map((node) => node.callFrame))
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  return { profile, nodes, parent }
}

function stack(id: number, nodes: Map<number, ProfileNode>, parent: Map<number, number>): CallFrame[] {
  const frames: CallFrame[] = []
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at))
    frames.push((nodes.get(at) as ProfileNode).callFrame)
  return frames
}

/** A frame of the file tsc writes as dist/<file>: either that file, or its source in a bundle's source map. */
const isDist = (frame: CallFrame, file: string) =>
  frame.url.endsWith(`/dist/${file}`) || frame.url.endsWith(`/src/${file.replace(/\.js$/, '.ts')}`)
const inOurs = (url: string, folder = '') => url.includes(`/dist/${folder}`) || url.includes(`/src/${folder}`)

/** The stage of a sample whose stack is `frames` (leaf first). */
function stageOf(frames: CallFrame[]): string {
  const leaf = frames[0] as CallFrame
  if (leaf.functionName === '(garbage collector)') return 'V8 garbage collector'
  for (const [i, frame] of frames.entries()) {
    const { url, functionName } = frame
    const outer = frames.slice(i + 1)
    if (functionName.startsWith('RegExp:') && outer.some((f) => f.url.includes('/node_modules/secure-json-parse/'))) {
      return 'prototype-poisoning scan (secure-json-parse regexes over the body)'
    }
    if (url.includes('/node_modules/secure-json-parse/')) return 'JSON.parse (secure-json-parse `_parse`)'
    if (isDist(frame, 'http/json-body.js') && functionName === 'tooDeep') return 'nesting-depth check (json-body.ts)'
    if (
      url.includes('/node_modules/fastify/lib/validation.js') ||
      isDist(frame, 'http/precompiled.js') ||
      (url === '' && /^validate\d*$/.test(functionName))
    ) {
      return 'request schema validation (ajv)'
    }
    if (inOurs(url, 'challenge/')) return 'sync (the pure hook)'
    if (url.startsWith('node:internal/crypto/')) {
      const owner = outer.find((f) => inOurs(f.url))
      if (owner && isDist(owner, 'http/auth.js')) return 'bearer token check (SHA-256)'
      if (owner && isDist(owner, 'http/routes/metacontroller-hooks.js')) return 'answer: SHA-256 ETag'
    }
    if (isDist(frame, 'http/auth.js')) return 'bearer token check (SHA-256)'
    if (
      isDist(frame, 'http/routes/metacontroller-hooks.js') &&
      (functionName === 'sendAnswer' || functionName === 'etagOf') &&
      i === 0
    ) {
      return 'answer: JSON.stringify (self time of sendAnswer)'
    }
    if (
      url.includes('/node_modules/prom-client/') ||
      url.includes('/node_modules/tdigest/') ||
      isDist(frame, 'http/metrics.js')
    ) {
      return 'metrics (prom-client)'
    }
    if (url.includes('/node_modules/pino') || url.includes('/node_modules/thread-stream/')) return 'logging (pino)'
    if (url.startsWith('node:')) return 'node: HTTP parsing, sockets, streams, buffers (request read, answer write)'
    if (url.includes('/node_modules/')) return 'fastify and its helpers (routing, hooks, reply, body collection)'
    if (inOurs(url)) return 'our HTTP shell (routes, in-flight set, error handling)'
  }
  return 'V8 / native (program)'
}

function label(frame: CallFrame): string {
  const file = frame.url.replace(/^file:\/\/.*?\/(node_modules|dist|src)\//, '$1/')
  const name = frame.functionName.startsWith('RegExp:')
    ? 'RegExp (secure-json-parse)'
    : frame.functionName || '(anonymous)'
  return `${name}${file ? ` ${file}:${frame.lineNumber + 1}` : ''}`
}

/** Serving only: samples in the first `skipMs` of the profile (the process starting) are left out. */
export function summarise(file: string, skipMs = 0): ProfileSummary {
  const { profile, nodes, parent } = read(file)
  const stages = new Map<string, number>()
  const functions = new Map<string, number>()
  let busy = 0
  let elapsed = 0
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0
    elapsed += dt
    if (elapsed < skipMs * 1000) return
    const leaf = (nodes.get(id) as ProfileNode).callFrame
    if (leaf.functionName === '(idle)') return
    busy += dt
    functions.set(label(leaf), (functions.get(label(leaf)) ?? 0) + dt)
    const stage = stageOf(stack(id, nodes, parent))
    stages.set(stage, (stages.get(stage) ?? 0) + dt)
  })
  const sorted = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1])
  return {
    busyMs: busy / 1000,
    stages: sorted(stages).map(([stage, us]) => ({ stage, shared: SHARED.has(stage), share: busy ? us / busy : 0 })),
    functions: sorted(functions)
      .slice(0, 10)
      .map(([name, us]) => ({ name, share: busy ? us / busy : 0 })),
  }
}

export interface StartSummary {
  /** the profile's span: process start (roughly) to the end of the profile */
  spanMs: number
  phases: Array<{ phase: string; ms: number }>
}

/** A cold start: inclusive time of its phases (a sample counts once, for the first phase that matches). */
export function summariseStart(file: string): StartSummary {
  const { profile, nodes, parent } = read(file)
  const phases: Array<[string, (frames: CallFrame[]) => boolean]> = [
    ['V8 garbage collector', (f) => f[0]?.functionName === '(garbage collector)'],
    [
      'request-schema compilation (ajv, fastify compileSchemasForValidation)',
      (f) => f.some((x) => x.functionName === 'compileSchemasForValidation'),
    ],
    [
      'response-schema compilation (fast-json-stringify)',
      (f) => f.some((x) => x.functionName === 'compileSchemasForSerialization'),
    ],
    [
      'first /sync call (cold JIT)',
      (f) => f.some((x) => isDist(x, 'http/routes/metacontroller-hooks.js') && x.functionName === 'handle'),
    ],
    [
      'buildApp, the rest (fastify instance, metrics registry, routes)',
      (f) => f.some((x) => isDist(x, 'http/app.js') && x.functionName === 'buildApp'),
    ],
    [
      'listen and plugin loading (avvio)',
      (f) => f.some((x) => x.url.includes('/node_modules/avvio/') || x.functionName === 'listen'),
    ],
    [
      'module loading (reading, compiling and running modules)',
      (f) => f.some((x) => x.url.startsWith('node:internal/modules/') || x.functionName === 'compileSourceTextModule'),
    ],
  ]
  const totals = new Map<string, number>()
  let other = 0
  let idle = 0
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0
    const frames = stack(id, nodes, parent)
    if (frames[0]?.functionName === '(idle)') {
      idle += dt
      return
    }
    const phase = phases.find(([, matches]) => matches(frames))
    if (phase) totals.set(phase[0], (totals.get(phase[0]) ?? 0) + dt)
    else other += dt
  })
  return {
    spanMs: (profile.endTime - profile.startTime) / 1000,
    phases: [
      ...phases.map(([phase]) => ({ phase, ms: (totals.get(phase) ?? 0) / 1000 })),
      { phase: 'other busy time (bootstrap, config, signals, the rest)', ms: other / 1000 },
      { phase: 'idle (waiting on I/O)', ms: idle / 1000 },
    ].sort((a, b) => b.ms - a.ms),
  }
}
