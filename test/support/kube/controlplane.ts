// A real Kubernetes control plane for tests, without containers: etcd, kube-apiserver and kube-controller-manager
// built from Kubernetes' own Go modules (controlplane/build.sh), on 127.0.0.1 with free ports and a temp dir.
// What it started is removed by stop(), and by a detached reaper when the owning process dies first (a test
// killed by a timeout, Ctrl-C): no process and no directory outlives the run.
import { spawnSync } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePorts, Processes, startReaper, waitForChild } from './processes.js'

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
  /** the CA bundle of the API server's serving certificate */
  ca: string
  /** the admin's bearer token */
  token: string
  stop: () => Promise<void>
}

export interface StartOptions {
  binDir: string
  /** whose death stops the control plane (default: this process); 0: nobody's (`npm run start:cluster`) */
  owner?: number
  /** let the components outlive this process (for the CLI); default false */
  detached?: boolean
  /** flags added to kube-apiserver's (a benchmark trying the server's own limits) */
  apiserverArgs?: string[]
  /**
   * For a real node (test/support/node/): the API server listens on this address (the node's, inside the suite's
   * network namespace, where every port is free) and publishes it as the `kubernetes` Service's endpoint, so pods
   * reach it; the controllers a real node needs run too (NODE_CONTROLLERS).
   */
  forNode?: { address: string }
}

/** Admission plugins on top of the defaults (PodSecurity, ValidatingAdmissionPolicy, ServiceAccount, ... are on). */
const EXTRA_ADMISSION = ['OwnerReferencesPermissionEnforcement']
/**
 * The five, plus the one that type-checks ValidatingAdmissionPolicies against the schemas they match
 * (status.typeChecking): without it a policy with a type error shows no warning. An explicit list also keeps the
 * node-lifecycle controller from evicting the pods of the stand-in node.
 */
const CONTROLLERS = [
  'deployment',
  'replicaset',
  'garbagecollector',
  'namespace',
  'serviceaccount',
  'validatingadmissionpolicy-status-controller',
]
/**
 * What a real node needs on top: EndpointSlices for Services (kube-proxy programs nothing without them), the
 * kube-root-ca.crt ConfigMap in every namespace (pods with a projected token wait for it), the node
 * lifecycle controller (it lifts the node's not-ready taint once the kubelet reports Ready), and the DaemonSet
 * controller (a definition's pre-pull of its images, docs/api.md#pre-pulled-images).
 */
const NODE_CONTROLLERS = [
  'endpointslice',
  'endpointslicemirroring',
  'root-ca-cert-publisher',
  'nodelifecycle',
  'daemonset',
]
/** Fixed ports of the control plane on a node's own address (a fresh network namespace has them all free). */
const NODE_PORTS = [2379, 2380, 6443]

/** Builds (the first time: 10 to 25 minutes) or finds the binaries; returns their directory. */
export function controlPlaneBinaries(options: { build: boolean } = { build: true }): string {
  const fromEnv = process.env.CONTROLPLANE_BIN
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv
  const script = join(repoRoot, 'controlplane/build.sh')
  const result = spawnSync(script, options.build ? [] : ['--check'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  if (result.status !== 0) {
    throw new Error(
      options.build
        ? `${script} failed (exit ${result.status})`
        : 'the control-plane binaries are not built yet: run `npm run build:cluster` (10 to 25 minutes the first time)',
    )
  }
  return result.stdout.trim()
}

export async function startControlPlane(options: StartOptions): Promise<ControlPlane> {
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-cp-'))
  const owner = options.owner ?? process.pid
  if (owner !== 0) startReaper(owner, dir)
  const processes = new Processes(dir, options.detached ?? false)
  const stop = async () => {
    // Reverse order: the controller manager and the API server go before etcd.
    await processes.stop()
    rmSync(dir, { recursive: true, force: true })
  }
  // On a node (lease endpoint reconciler) the API server took 10 s to end after SIGTERM, with no client left to
  // serve: 2 s, then SIGKILL (its data goes with the temp dir anyway).
  const launch = (name: string, args: string[]) =>
    processes.launch(name, join(options.binDir, name), args, {
      graceMs: name === 'kube-apiserver' && options.forNode !== undefined ? 2000 : 10_000,
    })
  try {
    const node = options.forNode
    const address = node?.address ?? '127.0.0.1'
    const [etcdPort, peerPort, apiPort] = node === undefined ? await freePorts(3) : NODE_PORTS
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
    await waitForChild('etcd', etcd, dir, async () => (await httpGet(`${etcdUrl}/health`)).includes('"health":"true"'))

    const token = randomBytes(24).toString('hex')
    writeFileSync(join(dir, 'tokens.csv'), `${token},admin,admin,"system:masters"\n`, { mode: 0o600 })
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    // One RSA key signs service-account tokens and verifies them.
    writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
    const server = `https://${address}:${apiPort}`
    const apiserver = launch('kube-apiserver', [
      `--etcd-servers=${etcdUrl}`,
      `--bind-address=${address}`,
      `--secure-port=${apiPort}`,
      // Without it the server looks for a default route to advertise, and may exit.
      `--advertise-address=${address}`,
      // On a node, the `kubernetes` Service leads to the API server (pods such as CoreDNS use it); else to nothing.
      `--endpoint-reconciler-type=${node === undefined ? 'none' : 'lease'}`,
      `--cert-dir=${join(dir, 'pki')}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(dir, 'sa.key')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--authorization-mode=RBAC',
      `--enable-admission-plugins=${EXTRA_ADMISSION.join(',')}`,
      // kubectl logs/exec: reach the kubelet at the node's address, not by its host name.
      ...(node === undefined ? [] : ['--kubelet-preferred-address-types=InternalIP']),
      ...(options.apiserverArgs ?? []),
    ])
    // The self-signed serving certificate (with its CA) appears in cert-dir once the server starts.
    const ca = join(dir, 'pki', 'apiserver.crt')
    await waitForChild(
      'kube-apiserver',
      apiserver,
      dir,
      async () => existsSync(ca) && (await httpsGet(`${server}/readyz`, token, ca)) === 'ok',
    )
    const kubeconfig = join(dir, 'kubeconfig')
    writeFileSync(kubeconfig, kubeconfigYaml(server, ca, token), { mode: 0o600 })

    const kcm = launch('kube-controller-manager', [
      `--kubeconfig=${kubeconfig}`,
      `--controllers=${[...CONTROLLERS, ...(node === undefined ? [] : NODE_CONTROLLERS)].join(',')}`,
      '--leader-elect=false',
      '--secure-port=0',
      // What root-ca-cert-publisher publishes: the CA pods use to trust the API server.
      ...(node === undefined ? [] : [`--root-ca-file=${ca}`]),
    ])
    // Pods are refused until a namespace's `default` ServiceAccount exists: wait for the controller to make one.
    await waitForChild('kube-controller-manager', kcm, dir, async () =>
      (await httpsGet(`${server}/api/v1/namespaces/default/serviceaccounts/default`, token, ca)).includes(
        '"name":"default"',
      ),
    )
    return { dir, kubeconfig, server, binDir: options.binDir, pids: processes.pids, ca, token, stop }
  } catch (error) {
    const logs = processes.tail()
    await stop()
    throw new Error(`${(error as Error).message}\n${logs}`, { cause: error })
  }
}

async function httpGet(url: string): Promise<string> {
  const response = await fetch(url, { signal: AbortSignal.timeout(2000) })
  return response.text()
}

function httpsGet(url: string, token: string, caFile: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { headers: { authorization: `Bearer ${token}` }, ca: readFileSync(caFile), timeout: 2000 },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (body += chunk))
        res.on('end', () => resolve(body))
      },
    )
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
