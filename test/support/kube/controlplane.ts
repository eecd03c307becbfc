// A real Kubernetes control plane for tests, without containers: etcd, kube-apiserver and kube-controller-manager
// built from Kubernetes' own Go modules (controlplane/build.sh), on 127.0.0.1 with free ports and a temp dir.
// What it started is removed by stop(), and by a detached reaper when the owning process dies first (a test
// killed by a timeout, Ctrl-C): no process and no directory outlives the run.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePorts, logTail, spawnLogged, stopChild, waitUntil } from '../processes.js'

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')

export interface ControlPlane {
  /** the temp dir holding data, certificates, logs and the kubeconfig */
  dir: string
  kubeconfig: string
  /** https://127.0.0.1:<port> */
  server: string
  /** the directory of etcd, kube-apiserver, kube-controller-manager, kubectl */
  binDir: string
  /** components' process ids (also in <dir>/pids, which the reaper reads) */
  pids: number[]
  stop: () => Promise<void>
}

export interface StartOptions {
  binDir: string
  /** whose death stops the control plane (default: this process); 0: nobody's (`npm run cluster:up`) */
  owner?: number
  /** let the components outlive this process (for the CLI); default false */
  detached?: boolean
  /** flags added to kube-apiserver's (a benchmark trying the server's own limits) */
  apiserverArgs?: string[]
}

/** Admission plugins on top of the defaults (PodSecurity, ValidatingAdmissionPolicy, ServiceAccount, ... are on). */
const EXTRA_ADMISSION = ['OwnerReferencesPermissionEnforcement']
/**
 * The issue's five, plus the one that type-checks ValidatingAdmissionPolicies against the schemas they match
 * (status.typeChecking): without it a policy with a type error shows no warning. An explicit list also keeps the
 * node-lifecycle controller from evicting the pods of the stand-in node.
 */
const CONTROLLERS = ['deployment', 'replicaset', 'garbagecollector', 'namespace', 'serviceaccount', 'validatingadmissionpolicy-status-controller']
const STARTUP_TIMEOUT_MS = 60_000

/** Builds (the first time: 10 to 25 minutes) or finds the binaries; returns their directory. */
export function controlPlaneBinaries(options: { build: boolean } = { build: true }): string {
  const fromEnv = process.env.CONTROLPLANE_BIN
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv
  const script = join(repoRoot, 'controlplane/build.sh')
  const result = spawnSync(script, options.build ? [] : ['--check'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  if (result.status !== 0) {
    throw new Error(options.build ? `${script} failed (exit ${result.status})` : 'the control-plane binaries are not built yet: run `npm run cluster:build` (10 to 25 minutes the first time)')
  }
  return result.stdout.trim()
}

export async function startControlPlane(options: StartOptions): Promise<ControlPlane> {
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-cp-'))
  const owner = options.owner ?? process.pid
  if (owner !== 0) startReaper(owner, dir)
  const processes: ChildProcess[] = []
  const pids: number[] = []
  const stop = async () => {
    // Reverse order: the controller manager and the API server go before etcd.
    for (const child of [...processes].reverse()) await stopChild(child, 10_000)
    rmSync(dir, { recursive: true, force: true })
  }
  const launch = (name: string, args: string[]) => {
    const child = spawnLogged(join(options.binDir, name), args, { logFile: join(dir, `${name}.log`), detached: options.detached ?? false })
    if (options.detached) child.unref()
    processes.push(child)
    pids.push(child.pid as number)
    appendFileSync(join(dir, 'pids'), `${child.pid}\n`)
    return child
  }
  try {
    const [etcdPort, peerPort, apiPort] = await freePorts(3)
    const etcdUrl = `http://127.0.0.1:${etcdPort}`
    const peerUrl = `http://127.0.0.1:${peerPort}`
    const etcd = launch('etcd', [
      '--name=default',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=default=${peerUrl}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ])
    await waitFor('etcd', etcd, dir, async () => (await httpGet(`${etcdUrl}/health`)).includes('"health":"true"'))

    const token = randomBytes(24).toString('hex')
    writeFileSync(join(dir, 'tokens.csv'), `${token},admin,admin,"system:masters"\n`, { mode: 0o600 })
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    // One RSA key signs service-account tokens and verifies them.
    writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
    const server = `https://127.0.0.1:${apiPort}`
    const apiserver = launch('kube-apiserver', [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      // Without it the server looks for a default route to advertise, and may exit.
      '--advertise-address=127.0.0.1',
      '--endpoint-reconciler-type=none',
      `--cert-dir=${join(dir, 'pki')}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(dir, 'sa.key')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--authorization-mode=RBAC',
      `--enable-admission-plugins=${EXTRA_ADMISSION.join(',')}`,
      ...(options.apiserverArgs ?? []),
    ])
    // The self-signed serving certificate (with its CA) appears in cert-dir once the server starts.
    const ca = join(dir, 'pki', 'apiserver.crt')
    await waitFor('kube-apiserver', apiserver, dir, async () => existsSync(ca) && (await httpsGet(`${server}/readyz`, token, ca)) === 'ok')
    const kubeconfig = join(dir, 'kubeconfig')
    writeFileSync(kubeconfig, kubeconfigYaml(server, ca, token), { mode: 0o600 })

    const kcm = launch('kube-controller-manager', [
      `--kubeconfig=${kubeconfig}`,
      `--controllers=${CONTROLLERS.join(',')}`,
      '--leader-elect=false',
      '--secure-port=0',
    ])
    // Pods are refused until a namespace's `default` ServiceAccount exists: wait for the controller to make one.
    await waitFor('kube-controller-manager', kcm, dir, async () =>
      (await httpsGet(`${server}/api/v1/namespaces/default/serviceaccounts/default`, token, ca)).includes('"name":"default"'),
    )
    return { dir, kubeconfig, server, binDir: options.binDir, pids, stop }
  } catch (error) {
    const logs = tailLogs(dir)
    await stop()
    throw new Error(`${(error as Error).message}\n${logs}`, { cause: error })
  }
}

/**
 * A detached shell that waits for the owner to die or the dir to disappear (a clean stop), then kills every
 * process listed in <dir>/pids and removes the dir. It is its own process group, so a signal to the test
 * runner's group does not take it along.
 */
function startReaper(owner: number, dir: string): void {
  const script = `
    while kill -0 ${owner} 2>/dev/null && [ -d "$1" ]; do sleep 0.5; done
    [ -d "$1" ] || exit 0
    pids=$(cat "$1/pids" 2>/dev/null)
    [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
    for i in $(seq 20); do alive=0; for p in $pids; do kill -0 $p 2>/dev/null && alive=1; done; [ $alive = 0 ] && break; sleep 0.25; done
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
    rm -rf "$1"`
  spawn('bash', ['-c', script, 'reaper', dir], { detached: true, stdio: 'ignore' }).unref()
}

/** Waits until a component answers; fails at once when it exits (its log is in the dir). */
function waitFor(name: string, child: ChildProcess, dir: string, ready: () => Promise<boolean>): Promise<void> {
  return waitUntil(name, ready, { timeoutMs: STARTUP_TIMEOUT_MS, everyMs: 100, child, detail: () => `logs in ${dir}` })
}

function tailLogs(dir: string): string {
  return ['etcd', 'kube-apiserver', 'kube-controller-manager']
    .filter((name) => existsSync(join(dir, `${name}.log`)))
    .map((name) => `--- ${name}.log (last lines) ---\n${logTail(join(dir, `${name}.log`), 15)}`)
    .join('\n')
}

async function httpGet(url: string): Promise<string> {
  const response = await fetch(url, { signal: AbortSignal.timeout(2000) })
  return response.text()
}

function httpsGet(url: string, token: string, caFile: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${token}` }, ca: readFileSync(caFile), timeout: 2000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve(body))
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end()
  })
}

function kubeconfigYaml(server: string, caFile: string, token: string): string {
  return `apiVersion: v1
kind: Config
clusters:
  - name: challenge-hooks-test
    cluster:
      server: ${server}
      certificate-authority: ${caFile}
users:
  - name: admin
    user:
      token: ${token}
contexts:
  - name: challenge-hooks-test
    context:
      cluster: challenge-hooks-test
      user: admin
current-context: challenge-hooks-test
`
}
