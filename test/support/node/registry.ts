// The suite's image registry (controlplane/node/registry: go-containerregistry's registry behind basic auth for
// alice's private prefix), on the node's loopback: started by node.ts before containerd, filled by the tests that
// pull (pushImage), which run inside the node's network namespace as containerd does. The other scenarios keep
// the imported test images (localhost/challenge-hooks-test/...), which are never pulled.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Processes } from '../kube/processes.js'
import { waitForChild } from '../kube/processes.js'
import { image, REGISTRY_ADDRESS, REGISTRY_NAME, REGISTRY_PRIVATE } from './layout.js'

const run = promisify(execFile)

/** Starts the registry; resolves once it answers `GET /v2/`. */
export async function startRegistry(processes: Processes, bin: string, logs: string): Promise<void> {
  const { prefix, user, password } = REGISTRY_PRIVATE
  const child = processes.launch('registry', bin, [
    'serve',
    '-addr',
    REGISTRY_ADDRESS,
    '-private',
    `${prefix}=${user}:${password}`,
  ])
  await waitForChild(
    'registry',
    child,
    logs,
    async () => (await fetch(`http://${REGISTRY_ADDRESS}/v2/`).catch(() => undefined))?.status === 200,
    20_000,
  )
}

function need(name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '')
    throw new Error(`${name} is not set: run inside the node (npm run test:node)`)
  return value
}

/**
 * Pushes the test image `from` (a short name of controlplane/images/images.txt) to the registry as each of
 * `targets` (`repo:tag`, e.g. `public/http-app:a`); `unique` gives each copy a layer of its own, so that pulling it
 * downloads and unpacks everything. Private repositories are pushed with their credentials. Returns, per target,
 * its reference as pods name it (`registry.test/<target>`) and the manifest's digest.
 */
export async function pushImage(
  from: string,
  targets: string[],
  options: { unique?: boolean } = {},
): Promise<{ reference: string; digest: string }[]> {
  const credentials = targets.some((target) => target.startsWith(REGISTRY_PRIVATE.prefix))
    ? ['-user', REGISTRY_PRIVATE.user, '-password', REGISTRY_PRIVATE.password]
    : []
  const { stdout } = await run(need('NODE_REGISTRY_BIN'), [
    'push',
    '-registry',
    REGISTRY_ADDRESS,
    '-tar',
    need('NODE_IMAGES_TAR'),
    '-from',
    image(from),
    ...(options.unique === true ? ['-unique'] : []),
    ...credentials,
    ...targets,
  ])
  return stdout
    .trim()
    .split('\n')
    .map((line) => {
      const [target, digest] = line.split(' ')
      return { reference: `${REGISTRY_NAME}/${target}`, digest: digest as string }
    })
}

/** The images containerd holds for the kubelet (its `k8s.io` namespace), by reference. */
export async function imagesOnNode(): Promise<string[]> {
  const { stdout } = await run(join(need('NODE_BIN_DIR'), 'bin/ctr'), [
    '--address',
    join(need('NODE_RUN_DIR'), 'containerd/containerd.sock'),
    '--namespace',
    'k8s.io',
    'images',
    'list',
    '--quiet',
  ])
  return stdout
    .trim()
    .split('\n')
    .filter((line) => line !== '')
}

/** A `.dockerconfigjson` pull Secret for the registry's name, with these credentials. */
export function pullSecret(name: string, user: string, password: string): Record<string, unknown> {
  const auth = Buffer.from(`${user}:${password}`).toString('base64')
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name },
    type: 'kubernetes.io/dockerconfigjson',
    data: {
      '.dockerconfigjson': Buffer.from(JSON.stringify({ auths: { [REGISTRY_NAME]: { auth } } })).toString('base64'),
    },
  }
}
