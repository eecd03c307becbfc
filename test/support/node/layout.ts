// Where things are on the suite's node: its addresses inside the private network namespace, the stand-ins for
// the outside world, and the test images (controlplane/images/images.txt).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from '../kube/controlplane.js'

export const NODE_NAME = 'challenge-hooks-node'
/** The node's address: on the bridge the pods hang off (so also their gateway); the API server and kubelet listen here. */
export const NODE_IP = '10.244.0.1'
export const POD_CIDR = '10.244.0.0/24'
/** The API server's --service-cluster-ip-range (test/support/kube/controlplane.ts). */
export const SERVICE_CIDR = '10.0.0.0/24'
export const DNS_SERVICE_IP = '10.0.0.10'
export const API_PORT = 6443
export const KUBELET_PORT = 10250
/** Stand-in for a cloud's metadata service: instances must never reach it. */
export const METADATA_IP = '169.254.169.254'
/** Stand-in for a public Internet address (TEST-NET-3): egress `Internet` reaches it, `None` and `DNS` do not. */
export const PUBLIC_IP = '203.0.113.10'
/** A name CoreDNS answers with PUBLIC_IP, so a lookup through kube-dns has an answer that is not the cluster's. */
export const PUBLIC_NAME = 'public.challenge-hooks.test'
/** Interfaces of the node's namespace: the pods' bridge, and the two stand-ins (no dummy driver in this kernel). */
export const BRIDGE = 'cni0'
export const STAND_IN_INTERFACES = { meta0: METADATA_IP, public0: PUBLIC_IP }

/** Test images by their short name (http-app, probe, ...): the references of controlplane/images/images.txt. */
export const IMAGES: Record<string, string> = Object.fromEntries(
  readFileSync(join(repoRoot, 'controlplane/images/images.txt'), 'utf8')
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter((line) => line !== '')
    .map((line) => {
      const reference = line.split(/\s+/)[0] as string
      return [reference.replace(/^.*\//, '').replace(/:.*$/, ''), reference]
    }),
)

export function image(name: string): string {
  const reference = IMAGES[name]
  if (reference === undefined) throw new Error(`no test image ${name} in controlplane/images/images.txt`)
  return reference
}

/**
 * The suite's image registry (controlplane/node/registry): on the node's loopback, so only the node's own processes
 * (containerd, the tests) reach it, never a pod. Images name it as `registry.test/...`, the prefix of the suite's
 * register of authors; containerd's hosts.toml for that name points at this address (plain HTTP: the traffic never
 * leaves the network namespace).
 */
export const REGISTRY_ADDRESS = '127.0.0.1:5000'
export const REGISTRY_NAME = 'registry.test'
/** Repositories under this prefix answer only to these credentials (alice's private images). */
export const REGISTRY_PRIVATE = { prefix: 'alice/', user: 'alice-puller', password: 'alice-registry-password' }
