// Runs inside the node's namespaces (cli.ts starts it with nsenter): prepares them, starts the control plane and
// the node, then runs tap over test/node/ (or any command, for a person debugging), and stops the node.
//
//   inside.ts test [tap args]     inside.ts run COMMAND [ARGS]
//
// Its environment (set by cli.ts): NODE_RUN_DIR, NODE_CGROUP_ROOT, CONTROLPLANE_BIN, NODE_BIN_DIR, NODE_IMAGES_TAR, NODE_REGISTRY_BIN.
import { spawn } from 'node:child_process'
import { cpSync, mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from '../kube/controlplane.js'
import { NODE_IP } from './layout.js'
import { prepareNamespace } from './namespace.js'
import { startNode } from './node.js'

async function main(mode: string | undefined, args: string[]): Promise<number> {
  const need = (name: string) => {
    const value = process.env[name]
    if (value === undefined || value === '')
      throw new Error(`inside.ts: ${name} is not set (run it through test/support/node/cli.ts)`)
    return value
  }
  const dir = need('NODE_RUN_DIR')
  let started = Date.now()
  prepareNamespace(dir)
  console.log(`# node: namespaces prepared in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  started = Date.now()
  const node = await startNode({
    controlPlaneBin: need('CONTROLPLANE_BIN'),
    nodeDir: need('NODE_BIN_DIR'),
    imagesTar: need('NODE_IMAGES_TAR'),
    registryBin: need('NODE_REGISTRY_BIN'),
    dir,
    cgroupRoot: need('NODE_CGROUP_ROOT'),
  })
  console.log(
    `# node: up in ${((Date.now() - started) / 1000).toFixed(1)} s (${node.timings.map(([step, s]) => `${step} ${s.toFixed(1)} s`).join(', ')})`,
  )
  const env = {
    ...process.env,
    TEST_KUBECONFIG: node.plane.kubeconfig,
    TEST_KUBECTL: join(need('CONTROLPLANE_BIN'), 'kubectl'),
    TEST_CLUSTER_OWNED: '1',
    TEST_NODE: '1',
    TEST_NODE_IP: NODE_IP,
    KUBECONFIG: node.plane.kubeconfig,
    PATH: `${need('CONTROLPLANE_BIN')}:${process.env.PATH ?? ''}`,
  }
  let code: number
  if (mode === 'test') {
    const files = readdirSync(join(repoRoot, 'test/node'))
      .filter((file) => file.endsWith('.test.ts'))
      .map((file) => `test/node/${file}`)
    started = Date.now()
    // tap's own binary, not npx: npm may look for the registry, which this namespace cannot reach (minutes lost).
    code = await run(
      join(repoRoot, 'node_modules/.bin/tap'),
      ['--disable-coverage', '--jobs=1', '--timeout=900', ...(args.length > 0 ? args : files.sort())],
      env,
    )
    console.log(`# suite ran in ${((Date.now() - started) / 1000).toFixed(0)} s`)
  } else {
    code = await run(args[0] as string, args.slice(1), env)
  }
  // The control plane's logs go with its dir: keep a copy beside the node's, for cli.ts to save on failure.
  const saved = join(node.logs, 'control-plane')
  mkdirSync(saved, { recursive: true })
  cpSync(node.plane.dir, saved, { recursive: true, filter: (source) => !/\/(etcd|pki)(\/|$)/.test(source) })
  started = Date.now()
  await node.stop()
  console.log(`# node: stopped in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  return code
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: repoRoot, env, stdio: 'inherit' })
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)))
  })
}

main(process.argv[2], process.argv.slice(3)).then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(`# node: ${error.message}`)
    process.exit(1)
  },
)
