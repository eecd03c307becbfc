// A real Kubernetes node, started inside the suite's namespaces (namespace.ts) after the control plane: the suite's
// image registry on the node's loopback (registry.ts), containerd (with the test images and the hook server's image
// imported, and the registry as `registry.test`), the kubelet, kube-proxy, kube-router's firewall, kube-scheduler and
// CoreDNS as a pod. stop() ends them, kubelet first; what they leave (pods' cgroups, containerd's shims, mounts)
// goes with the namespaces (teardown.sh).
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startControlPlane, type ControlPlane } from '../kube/controlplane.js'
import { kubectlFor, kubectlOk, type Kubectl } from '../kube/kubectl.js'
import { Processes, waitForChild } from '../kube/processes.js'
import { Rest } from '../kube/rest.js'
import {
  cniConflist,
  containerdToml,
  kubeletConfig,
  kubeProxyConfig,
  registryHostsToml,
  type NodePaths,
} from './configs.js'
import { coreDnsManifests } from './dns.js'
import { packHookImage } from './hook-image.js'
import { NODE_IP, NODE_NAME, REGISTRY_NAME, SERVICE_CIDR } from './layout.js'
import { startRegistry } from './registry.js'

const run = promisify(execFile)

export interface NodeOptions {
  /** the control plane's binaries (controlplane/build.sh) */
  controlPlaneBin: string
  /** the node's binaries and CNI plugins (controlplane/node/build.sh, first line) */
  nodeDir: string
  /** the test images' tarball (controlplane/node/build.sh, second line) */
  imagesTar: string
  /** the registry's binary (controlplane/node/build.sh, third line) */
  registryBin: string
  /** the run's temp dir (namespace.ts) */
  dir: string
  cgroupRoot: string
}

export interface RealNode {
  plane: ControlPlane
  kubectl: Kubectl
  rest: Rest
  /** how long each step took, in seconds, in order */
  timings: [string, number][]
  /** the directory of every daemon's log */
  logs: string
  stop(): Promise<void>
}

export async function startNode(options: NodeOptions): Promise<RealNode> {
  const timings: [string, number][] = []
  let last = Date.now()
  const step = (name: string) => {
    timings.push([name, (Date.now() - last) / 1000])
    last = Date.now()
  }
  const logs = join(options.dir, 'logs')
  mkdirSync(logs, { recursive: true })
  const plane = await startControlPlane({ binDir: options.controlPlaneBin, forNode: { address: NODE_IP } })
  step('control plane')
  const processes = new Processes(logs)
  const stop = async () => {
    await processes.stop()
    await plane.stop()
  }
  try {
    const bin = (name: string) => join(options.nodeDir, 'bin', name)
    const paths = writeConfigs(options)
    writeFileSync(join(options.dir, 'kube-proxy.json'), kubeProxyConfig(plane.kubeconfig))
    // containerd finds its shim, and the shim finds runc, on PATH.
    const env = {
      ...process.env,
      PATH: `${join(options.nodeDir, 'bin')}:/usr/local/sbin:/usr/sbin:/sbin:${process.env.PATH ?? ''}`,
    }
    await startRegistry(processes, options.registryBin, logs)
    step('registry')
    const containerd = processes.launch(
      'containerd',
      bin('containerd'),
      ['--config', join(options.dir, 'containerd.toml')],
      { env },
    )
    const ctr = (args: string[]) =>
      run(bin('ctr'), ['--address', paths.socket, '--namespace', 'k8s.io', ...args], { env, maxBuffer: 16 << 20 })
    await waitForChild(
      'containerd',
      containerd,
      logs,
      async () => existsSync(paths.socket) && (await ctr(['version'])).stdout.includes('Server'),
    )
    await ctr(['images', 'import', options.imagesTar])
    step('containerd and images')
    // Every instance's pod starts with the isolation gate, whose image is the hook server's.
    const hook = packHookImage(options.imagesTar, options.dir)
    await ctr(['images', 'import', hook.tar])
    rmSync(hook.tar)
    step(`hook image (${hook.megabytes.toFixed(0)} MB)`)

    const kubelet = processes.launch(
      'kubelet',
      bin('kubelet'),
      [
        `--config=${join(options.dir, 'kubelet.json')}`,
        `--kubeconfig=${plane.kubeconfig}`,
        `--hostname-override=${NODE_NAME}`,
        `--node-ip=${NODE_IP}`,
        `--root-dir=${paths.kubeletRoot}`,
        '--v=1',
      ],
      { env },
    )
    const rest = Rest.fromFile(plane.kubeconfig)
    await waitForChild(
      'kubelet',
      kubelet,
      logs,
      async () => nodeReady(await rest.get(`/api/v1/nodes/${NODE_NAME}`)),
      60_000,
    )
    step('kubelet to Node Ready')

    processes.launch('kube-proxy', bin('kube-proxy'), [`--config=${join(options.dir, 'kube-proxy.json')}`], { env })
    processes.launch(
      'kube-router',
      bin('kube-router'),
      [
        `--kubeconfig=${plane.kubeconfig}`,
        `--hostname-override=${NODE_NAME}`,
        '--run-firewall=true',
        '--run-router=false',
        '--run-service-proxy=false',
        '--enable-cni=false',
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        '--health-port=0',
        '--metrics-port=0',
      ],
      { env },
    )
    processes.launch(
      'kube-scheduler',
      bin('kube-scheduler'),
      [`--kubeconfig=${plane.kubeconfig}`, '--leader-elect=false', '--bind-address=127.0.0.1'],
      { env },
    )
    const kubectl = kubectlFor(join(options.controlPlaneBin, 'kubectl'), plane.kubeconfig)
    await kubectlOk(kubectl, ['apply', '--server-side', '-f', '-'], { input: coreDnsManifests() })
    await kubectlOk(kubectl, ['-n', 'kube-system', 'rollout', 'status', 'deployment/coredns', '--timeout=120s'])
    step('kube-proxy, kube-router, scheduler, CoreDNS ready')
    return { plane, kubectl, rest, timings, logs, stop }
  } catch (error) {
    const tail = processes.tail(25)
    await stop()
    throw new Error(`${(error as Error).message}\n${tail}`, { cause: error })
  }
}

function writeConfigs(options: NodeOptions): NodePaths {
  const at = (...parts: string[]) => join(options.dir, ...parts)
  const paths: NodePaths = {
    socket: at('containerd', 'containerd.sock'),
    containerdRoot: at('containerd', 'root'),
    containerdState: at('containerd', 'state'),
    cniBin: join(options.nodeDir, 'cni'),
    cniConf: at('cni'),
    kubeletRoot: at('kubelet'),
    resolvConf: at('resolv.conf'),
    cgroupRoot: `/${options.cgroupRoot}`,
    registryHosts: at('containerd', 'hosts'),
  }
  for (const path of [
    paths.containerdRoot,
    paths.containerdState,
    paths.cniConf,
    paths.kubeletRoot,
    join(paths.registryHosts, REGISTRY_NAME),
  ])
    mkdirSync(path, { recursive: true })
  writeFileSync(join(paths.registryHosts, REGISTRY_NAME, 'hosts.toml'), registryHostsToml())
  writeFileSync(at('containerd.toml'), containerdToml(paths))
  writeFileSync(join(paths.cniConf, '10-challenge-hooks.conflist'), cniConflist())
  writeFileSync(paths.resolvConf, '')
  writeFileSync(at('kubelet.json'), kubeletConfig(paths))
  return paths
}

function nodeReady(node: { status?: { conditions?: { type: string; status: string }[] } }): boolean {
  return (node.status?.conditions ?? []).some((condition) => condition.type === 'Ready' && condition.status === 'True')
}
