// The controller of a test file: the Metacontroller stand-in on the real API server, or the Metacontroller binary
// named by METACONTROLLER_BIN; both as Metacontroller's service account, reaching the hooks on loopback.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import { parse } from 'yaml'
import { repoRoot } from './controlplane.js'
import { kubectlOk } from './kubectl.js'
import { LiveCluster, type OffsetClock } from './live-cluster.js'
import { Rest } from './rest.js'
import { spawnLogged, stopChild } from '../processes.js'
import { httpTransport, resourceByName, Simulator, type CompositeController } from '../simulator/index.js'
import type { Json } from '../../helpers/world.js'
import type { ClusterEnv } from './install.js'
import { API, CONTROLLERS } from './names.js'

/** A Rest client that authenticates as Metacontroller's service account (a token from the TokenRequest API). */
export async function metacontrollerRest(env: ClusterEnv): Promise<{ rest: Rest; token: string }> {
  const request = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 7200 } }
  const answer = (await env.rest.call(
    'POST',
    '/api/v1/namespaces/metacontroller/serviceaccounts/metacontroller/token',
    { body: request },
  )) as {
    status: { token: string }
  }
  const kubeconfig = new KubeConfig()
  const cluster = env.rest.kubeconfig.getCurrentCluster() as NonNullable<
    ReturnType<typeof env.rest.kubeconfig.getCurrentCluster>
  >
  kubeconfig.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'metacontroller', token: answer.status.token }],
    contexts: [{ name: 'metacontroller', cluster: cluster.name, user: 'metacontroller' }],
    currentContext: 'metacontroller',
  })
  return { rest: new Rest(kubeconfig), token: answer.status.token }
}

export interface RunningController {
  name: 'stand-in' | 'metacontroller'
  /** Metacontroller's process (none for the stand-in, which runs in this process) */
  pid?: number
  sim: Simulator | undefined
  warnings: Rest['warnings']
  stop(): Promise<void>
}

/**
 * The stand-in for every installed CompositeController (the Challenges', then the warm pools'), each a Simulator on
 * its own watches, as Metacontroller runs one controller per CompositeController.
 */
export async function startStandIn(
  rest: Rest,
  hookUrl: string,
  token: string,
  clock: OffsetClock,
): Promise<RunningController> {
  const running: RunningController[] = []
  for (const path of CONTROLLERS) running.push(await startOneStandIn(rest, path, hookUrl, token, clock))
  return {
    name: 'stand-in',
    sim: running[0]?.sim,
    warnings: rest.warnings,
    async stop() {
      for (const each of running) await each.stop()
    },
  }
}

async function startOneStandIn(
  rest: Rest,
  path: string,
  hookUrl: string,
  token: string,
  clock: OffsetClock,
): Promise<RunningController> {
  // The hooks get the CompositeController as the API server stores it (metadata, the url hooks, the child rules of
  // the installed components), as from Metacontroller.
  const stored = await rest.get<CompositeController>(path)
  const { spec } = stored
  // What Metacontroller's informers watch: the parent, every child type, and the related types of the customize rules.
  const names = [
    spec.parentResource,
    ...(spec.childResources ?? []),
    { apiVersion: API, resource: 'challengedefinitions' },
    { apiVersion: API, resource: 'challenges' },
    { apiVersion: 'v1', resource: 'secrets' },
    { apiVersion: 'v1', resource: 'namespaces' },
    { apiVersion: 'v1', resource: 'limitranges' },
    // The pools' customize relates the Services that carry their claimants' tickets.
    { apiVersion: 'v1', resource: 'services' },
  ]
  const resources = names
    .map(({ apiVersion, resource }) => resourceByName(apiVersion, resource))
    .filter((r) => r !== undefined)
  const live = await LiveCluster.start(
    rest,
    [...new Map(resources.map((r) => [`${r.apiVersion}/${r.resource}`, r])).values()],
    clock,
  )
  // Each hook at the path its webhook url names (the pools' hooks are /pools/sync and /pools/customize).
  const paths = Object.fromEntries(
    Object.entries(spec.hooks ?? {}).map(([hook, { webhook }]) => [
      hook,
      new URL(String((webhook as Json).url ?? `${hookUrl}/${hook}`)).pathname,
    ]),
  )
  const sim = new Simulator(stored, live, httpTransport(hookUrl, { token, paths }))
  const abort = new AbortController()
  const serving = sim.serve(abort.signal)
  return {
    name: 'stand-in',
    sim,
    warnings: rest.warnings,
    async stop() {
      abort.abort()
      await serving
      sim.close()
      live.close()
    },
  }
}

/** A kubeconfig in `dir` for the cluster of `env`, as Metacontroller's service account (`token`); its path. */
export function writeMetacontrollerKubeconfig(env: ClusterEnv, token: string, dir: string): string {
  const cluster = env.rest.kubeconfig.getCurrentCluster() as NonNullable<
    ReturnType<typeof env.rest.kubeconfig.getCurrentCluster>
  >
  const kubeconfig = join(dir, 'kubeconfig')
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'c',
          cluster: {
            server: cluster.server,
            ...(cluster.caFile ? { 'certificate-authority': cluster.caFile } : {}),
            ...(cluster.caData ? { 'certificate-authority-data': cluster.caData } : {}),
          },
        },
      ],
      users: [{ name: 'metacontroller', user: { token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'metacontroller' } }],
      'current-context': 'c',
    }),
  )
  return kubeconfig
}

/**
 * The flags manifests/metacontroller/ adds to Metacontroller's container (its workers and its client's rate): the
 * binary runs as an operator installs it, not with client-go's 5 requests a second, which made a pool's claims
 * time out on the real node.
 */
export function shippedMetacontrollerArgs(): string[] {
  const kustomization = parse(readFileSync(join(repoRoot, 'manifests/metacontroller/kustomization.yaml'), 'utf8')) as {
    patches: { target?: { kind?: string }; patch: string }[]
  }
  const args: string[] = []
  for (const entry of kustomization.patches) {
    if (entry.target?.kind !== 'StatefulSet') continue
    for (const op of parse(entry.patch) as { op: string; path: string; value: unknown }[])
      if (op.op === 'add' && op.path === '/spec/template/spec/containers/0/args/-') args.push(String(op.value))
  }
  return args
}

/** The flags a suite's Metacontroller runs with beyond its connection's: the shipped ones, then METACONTROLLER_ARGS. */
export function metacontrollerArgs(): string[] {
  return [...shippedMetacontrollerArgs(), ...(process.env.METACONTROLLER_ARGS ?? '').split(' ').filter(Boolean)]
}

/** The Metacontroller binary, out of cluster, as Metacontroller's service account; its log in `logFile` when given. */
export async function startMetacontroller(
  env: ClusterEnv,
  token: string,
  logFile?: string,
): Promise<RunningController> {
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-mc-'))
  const kubeconfig = writeMetacontrollerKubeconfig(env, token, dir)
  const logPath = logFile ?? join(dir, 'metacontroller.log')
  const child = spawnLogged(
    process.env.METACONTROLLER_BIN as string,
    // METACONTROLLER_ARGS adds flags (e.g. --zap-log-level=debug), and its last word wins over the shipped ones.
    [
      `--kubeconfig=${kubeconfig}`,
      '--discovery-interval=1s',
      '--metrics-address=0',
      '--health-probe-bind-address=0',
      ...metacontrollerArgs(),
    ],
    { logFile: logPath },
  )
  let stopping = false
  child.once('exit', (code, signal) => {
    // Tests would only time out: say why, and keep the log.
    if (!stopping) console.error(`# metacontroller exited early (${code ?? signal}); its log: ${logPath}`)
  })
  return {
    name: 'metacontroller',
    pid: child.pid as number,
    sim: undefined,
    warnings: [],
    async stop() {
      stopping = true
      await stopChild(child, 30_000)
      if (process.env.METACONTROLLER_LOG !== undefined)
        writeFileSync(process.env.METACONTROLLER_LOG, readFileSync(logPath), { flag: 'a' })
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The installed CompositeControllers, their hooks pointed at this process's hook server. */
export async function applyControllerWithUrl(env: ClusterEnv, hookUrl: string, version?: 'v1' | 'v2'): Promise<void> {
  for (const path of CONTROLLERS)
    await applyOneWithUrl(env, path, hookUrl, path === CONTROLLERS[0] ? version : undefined)
}

async function applyOneWithUrl(env: ClusterEnv, path: string, hookUrl: string, version?: 'v1' | 'v2') {
  const stored = await env.rest.get<CompositeController>(path)
  // What an operator applies: the installed spec (with its components' child rules), no server-side metadata.
  const controller: CompositeController = {
    apiVersion: stored.apiVersion,
    kind: stored.kind,
    metadata: { name: stored.metadata.name },
    spec: stored.spec,
  }
  for (const [name, hook] of Object.entries(controller.spec.hooks ?? {})) {
    const webhook = hook.webhook as Json
    delete webhook.service
    webhook.url = `${hookUrl}${typeof webhook.path === 'string' ? webhook.path : `/${name}`}`
    delete webhook.path
    // The budget-across-namespaces component's change, when asked for.
    if (version !== undefined) hook.version = version
  }
  await kubectlOk(env.kubectl, ['apply', '--server-side', '--force-conflicts', '-f', '-'], {
    input: JSON.stringify(controller),
  })
}
