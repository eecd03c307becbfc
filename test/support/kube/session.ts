/**
 * The running half of `npm run start:cluster`: on the control plane the CLI started (and the project it installed),
 * the hook server as an operator runs it (`node dist/server.js`, NODE_ENV=production, the installed Secret's
 * FLAG_SECRET and HOOK_TOKEN, the settings of manifests/config.env) on loopback, the kubelet stand-in, and a
 * controller reaching the hooks through `webhook.url`: the Metacontroller stand-in, or Metacontroller itself when
 * METACONTROLLER_BIN names its binary. It runs in a detached process of its own until SIGTERM
 * (`npm run stop:cluster`), and writes <dir>/session.json once everything is up.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { readEnvFile } from '../../helpers/manifests.js'
import { repoRoot } from './controlplane.js'
import { Kubelet } from './kubelet.js'
import { kubectlFor } from './kubectl.js'
import { OffsetClock } from './live-cluster.js'
import { Rest } from './rest.js'
import { freePort, spawnLogged, stopChild, waitUntil } from '../processes.js'
import {
  applyControllerWithUrl,
  metacontrollerRest,
  startMetacontroller,
  startStandIn,
  type RunningController,
} from './controllers.js'
import type { ClusterEnv } from './install.js'

/** What <dir>/session.json says once the session is up. */
export interface SessionInfo {
  pid: number
  hookUrl: string
  opsUrl: string
  controller: RunningController['name']
  /** processes the session started (the hook server; Metacontroller), for `down` should the session die first */
  children: number[]
  logs: Record<string, string>
}

export const SESSION_FILE = 'session.json'

/** The cluster of a kubeconfig, with the built kubectl. */
export function clusterEnv(kubeconfig: string, binDir: string): ClusterEnv {
  return {
    kubeconfig,
    kubectl: kubectlFor(join(binDir, 'kubectl'), kubeconfig),
    rest: Rest.fromFile(kubeconfig),
    owned: true,
  }
}

/** Runs the session until SIGTERM or SIGINT; resolves once everything it started is stopped. */
export async function runSession(dir: string, binDir: string): Promise<void> {
  const env = clusterEnv(join(dir, 'kubeconfig'), binDir)
  const stops: Array<() => Promise<void> | void> = []
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop()
  }
  try {
    const secret = await env.rest.get<{ data: Record<string, string> }>(
      '/api/v1/namespaces/challenge-hooks/secrets/challenge-hooks-secrets',
    )
    const read = (key: string) => Buffer.from(secret.data[key] as string, 'base64').toString('utf8')
    const token = read('HOOK_TOKEN')
    const hook = await startHookServer(dir, { FLAG_SECRET: read('FLAG_SECRET'), HOOK_TOKEN: token })
    stops.push(hook.stop)
    // The installed CompositeController, its hooks pointed at this hook server on loopback.
    await applyControllerWithUrl(env, hook.url)
    const kubelet = new Kubelet(env.rest)
    await kubelet.start()
    stops.push(() => kubelet.stop())
    const identity = await metacontrollerRest(env)
    const metacontrollerLog = join(dir, 'metacontroller.log')
    const controller = process.env.METACONTROLLER_BIN
      ? await startMetacontroller(env, identity.token, metacontrollerLog)
      : await startStandIn(identity.rest, hook.url, token, new OffsetClock())
    stops.push(() => controller.stop())
    const info: SessionInfo = {
      pid: process.pid,
      hookUrl: hook.url,
      opsUrl: hook.opsUrl,
      controller: controller.name,
      children: [hook.pid, ...(controller.pid === undefined ? [] : [controller.pid])],
      logs: {
        'hook server': join(dir, 'hook-server.log'),
        ...(controller.name === 'metacontroller' ? { metacontroller: metacontrollerLog } : {}),
        session: join(dir, 'session.log'),
      },
    }
    writeFileSync(join(dir, SESSION_FILE), JSON.stringify(info, null, 2))
    console.log(`session up: hook server ${hook.url}, controller ${controller.name}`)
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve)
      process.once('SIGINT', resolve)
    })
    console.log('session: stopping')
  } finally {
    await stopAll()
  }
}

interface HookServer {
  url: string
  opsUrl: string
  pid: number
  stop: () => Promise<void>
}

/** `node dist/server.js` as in the install: production mode, the Secret's values, manifests/config.env. */
async function startHookServer(dir: string, secrets: Record<string, string>): Promise<HookServer> {
  const [port, opsPort] = [await freePort(), await freePort()]
  const logFile = join(dir, 'hook-server.log')
  const settings = Object.fromEntries(readEnvFile(join(repoRoot, 'manifests/config.env')))
  const child = spawnLogged(process.execPath, [join(repoRoot, 'dist/server.js')], {
    env: {
      ...process.env,
      ...settings,
      ...secrets,
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      OPS_PORT: String(opsPort),
    },
    logFile,
  })
  const opsUrl = `http://127.0.0.1:${opsPort}`
  await waitUntil('the hook server', async () => (await fetch(`${opsUrl}/readyz`)).ok, {
    timeoutMs: 30_000,
    child,
    detail: () => `its log: ${logFile}`,
  })
  return {
    url: `http://127.0.0.1:${port}`,
    opsUrl,
    pid: child.pid as number,
    // It drains for SHUTDOWN_DRAIN_MS (5 s), then exits.
    stop: () => stopChild(child, 30_000),
  }
}
