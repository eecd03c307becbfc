// npm run build:node | test:node | run:node | bench:node-start
//
//   build  builds (or finds) the control plane and the node: controlplane/build.sh, controlplane/node/build.sh
//   test   the real-node suite: a node in namespaces of its own, tap over test/node/ inside them, then everything
//          stopped and removed, and checked: nothing left behind, the host's network, mounts and settings unchanged
//   run    the same node, with COMMAND run inside instead of tap (a shell for a person: `npm run run:node -- bash`)
//   bench  the same node, with tap over one benchmark file of bench/ instead of test/node/ (its figures go to
//          bench/RESULTS.md; tap is only its runner)
//
// Why the test runner runs inside the namespaces (nsenter) rather than joining them by a veth pair: the API
// server, the kubelet, NodePorts and pod addresses are then all reachable as on a node, and the host gets no
// interface, route or address at all.
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { controlPlaneBinaries, repoRoot } from '../kube/controlplane.js'
import { hostChanges, snapshotHost } from './host.js'
import {
  cgroupMounts,
  createCgroupRoot,
  insideCommand,
  leftovers,
  startHolder,
  startNodeReaper,
  teardown,
} from './namespace.js'

const TOOLS = ['runc', 'iptables', 'ipset', 'nft', 'conntrack', 'unshare', 'nsenter', 'ip']

async function main(command: string | undefined, args: string[]): Promise<number> {
  switch (command) {
    case 'build': {
      console.log(controlPlaneBinaries())
      console.log(nodeBinaries().join('\n'))
      return 0
    }
    case 'test':
    case 'run':
      return onNode(command, args)
    case 'bench':
      if (args.length !== 1 || !/^bench\/.+\.ts$/.test(args[0] as string)) {
        console.error('usage: cli.ts bench bench/<benchmark>/run.ts (one benchmark file, run by tap on the node)')
        return 64
      }
      return onNode('test', args)
    default:
      console.error('usage: cli.ts build | test [tap args] | run COMMAND [ARGS] | bench FILE')
      return 64
  }
}

/** The node's binaries, images and registry (controlplane/node/build.sh): [binaries' dir, images' dir, registry's dir]. */
export function nodeBinaries(): [string, string, string] {
  const script = join(repoRoot, 'controlplane/node/build.sh')
  const result = spawnSync(script, [], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  const [bin, images, registry] = result.stdout.trim().split('\n')
  if (result.status !== 0 || bin === undefined || images === undefined || registry === undefined)
    throw new Error(`${script} failed (exit ${result.status})`)
  return [bin, images, registry]
}

async function onNode(mode: 'test' | 'run', args: string[]): Promise<number> {
  if (process.getuid?.() !== 0) {
    console.error('the real-node suite needs root (namespaces, mounts, cgroups)')
    return 1
  }
  const missing = TOOLS.filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
  if (missing.length > 0) {
    console.error(`missing: ${missing.join(' ')} (apt-get install -y runc iptables ipset nftables conntrack)`)
    return 1
  }
  const controlPlaneBin = controlPlaneBinaries()
  const [nodeDir, imagesDir, registryDir] = nodeBinaries()
  const before = snapshotHost()
  const started = Date.now()
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-node-'))
  const cgroupRoot = basename(dir)
  createCgroupRoot(cgroupRoot)
  const holder = await startHolder(dir, cgroupRoot).catch((error: Error) => {
    // Nothing ran yet: only the (empty) cgroups and the temp dir to remove.
    for (const mount of cgroupMounts()) if (existsSync(join(mount, cgroupRoot))) rmdirSync(join(mount, cgroupRoot))
    rmSync(dir, { recursive: true, force: true })
    throw error
  })
  startNodeReaper(process.pid, holder)
  const [command, argv] = insideCommand(holder, repoRoot, [
    process.execPath,
    '--import',
    'tsx',
    'test/support/node/inside.ts',
    mode,
    ...args,
  ])
  // The run's own temp dir: what the suite leaves there is its own (other checkouts' suites share /tmp).
  const runTmp = join(dir, 'tmp')
  mkdirSync(runTmp)
  const env = {
    ...process.env,
    TMPDIR: runTmp,
    NODE_RUN_DIR: dir,
    NODE_CGROUP_ROOT: cgroupRoot,
    CONTROLPLANE_BIN: controlPlaneBin,
    NODE_BIN_DIR: nodeDir,
    NODE_IMAGES_TAR: join(imagesDir, 'images.tar'),
    NODE_REGISTRY_BIN: join(registryDir, 'registry'),
  }
  const inner = spawn(command, argv, { stdio: 'inherit', env })
  const forward = (signal: NodeJS.Signals) => inner.kill(signal)
  process.on('SIGINT', forward)
  process.on('SIGTERM', forward)
  const code = await new Promise<number>((resolve) =>
    inner.on('close', (exit, signal) => resolve(exit ?? (signal ? 1 : 0))),
  )
  // tsx's, V8's and Node's compile caches are the tools' own, not something a test made.
  const leftTemp = readdirSync(runTmp)
    .filter((name) => !/^(tsx-\d+|v8-compile-cache-\d+|node-compile-cache)$/.test(name))
    .map((name) => join(runTmp, name))
  if (code !== 0 || process.env.NODE_KEEP_LOGS === '1') saveLogs(dir)
  const stopping = Date.now()
  teardown(holder)
  console.log(
    `# node: namespaces, cgroups and files removed in ${((Date.now() - stopping) / 1000).toFixed(1)} s; whole run ${((Date.now() - started) / 1000).toFixed(0)} s`,
  )

  const problems = [...leftovers(holder), ...hostChanges(before, snapshotHost()).map((change) => `host ${change}`)]
  if (leftTemp.length > 0) problems.push(`temp files the suite left: ${leftTemp.join(' ')}`)
  if (problems.length > 0) {
    console.log(`# not ok - nothing left behind:\n#   ${problems.join('\n#   ')}`)
    return code === 0 ? 1 : code
  }
  console.log(
    '# ok - nothing left behind (processes, namespaces, mounts, cgroups, temp files; host interfaces, routes, iptables, nftables, ipsets, mounts and kernel settings as before)',
  )
  return code
}

/** The node's and control plane's logs, kept in .node/logs-<time>/ of the checkout (the temp dir goes). */
function saveLogs(dir: string): void {
  const source = join(dir, 'logs')
  if (!existsSync(source)) return
  const target = join(repoRoot, '.node', `logs-${new Date().toISOString().replace(/[:.]/g, '-')}`)
  mkdirSync(target, { recursive: true })
  cpSync(source, target, { recursive: true })
  console.log(`# node: logs saved in ${target}`)
}

process.exitCode = await main(process.argv[2], process.argv.slice(3))
