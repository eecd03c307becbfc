// The node's configuration files: containerd, the CNI network, the kubelet and kube-proxy. Each setting that is
// not a default says why it is there; most are what this sandbox needs (see docs/real-node.md).
import {
  image,
  NODE_IP,
  NODE_NAME,
  POD_CIDR,
  BRIDGE,
  DNS_SERVICE_IP,
  KUBELET_PORT,
  REGISTRY_ADDRESS,
} from './layout.js'

export interface NodePaths {
  /** containerd's socket */
  socket: string
  /** where containerd keeps images and snapshots, and its run-time state */
  containerdRoot: string
  containerdState: string
  cniBin: string
  cniConf: string
  kubeletRoot: string
  /** the resolv.conf the kubelet gives pods (and itself): empty, so nothing of the host's leaks in */
  resolvConf: string
  /** the cgroup (in every hierarchy) under which the kubelet puts every pod: removed after the run */
  cgroupRoot: string
  /** containerd's registry hosts directory (one hosts.toml per registry name) */
  registryHosts: string
}

export function containerdToml(paths: NodePaths): string {
  return `version = 3
root = "${paths.containerdRoot}"
state = "${paths.containerdState}"

[grpc]
  address = "${paths.socket}"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  # The sandbox (pause) image is one of the imported test images, and is never pulled.
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "${image('pause')}"
  # The suite's registry (test/support/node/registry.ts): how containerd reaches each registry name.
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "${paths.registryHosts}"

[plugins."io.containerd.cri.v1.runtime"]
  # This sandbox lacks CAP_SYS_RESOURCE: runc could not lower oom_score_adj, and every pod sandbox failed.
  restrict_oom_score_adj = true
  cdi_spec_dirs = []
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["${paths.cniBin}"]
    conf_dir = "${paths.cniConf}"
  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
    # The kubelet drives cgroupfs (no systemd here).
    SystemdCgroup = false

[plugins."io.containerd.grpc.v1.cri"]
  # kubectl exec/logs stream through the kubelet, which reaches containerd's stream server on loopback.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`
}

/**
 * containerd's hosts.toml for REGISTRY_NAME: the suite's registry on the node's loopback, over plain HTTP (the
 * traffic never leaves the node's network namespace, so TLS would prove nothing here). Pull credentials reach it: the
 * kubelet hands containerd the pull Secret's entry for the image's registry name, with no server address of its
 * own, so containerd gives it to the host it contacts.
 */
export function registryHostsToml(): string {
  return `server = "http://${REGISTRY_ADDRESS}"\n`
}

/**
 * One bridge for every pod, its gateway the node's address; no masquerading: there is no uplink to leave by. IPv4
 * only: IPv6 is switched off in every pod's namespace (the tuning plugin).
 */
export function cniConflist(): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'challenge-hooks-node',
      plugins: [
        {
          type: 'bridge',
          bridge: BRIDGE,
          isGateway: true,
          ipMasq: false,
          // A pod reaching itself through its own Service.
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: POD_CIDR, rangeStart: '10.244.0.10', gateway: NODE_IP }]],
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
        // No IPv6 in any pod: kube-router filters IPv4 alone, and every pod with IPv6 on has a link-local address on
        // the shared bridge, over which no NetworkPolicy holds. A pod cannot switch it off itself (Restricted: no
        // capability, /proc/sys read-only): the node does, in each pod's network namespace, once bridge has made it
        // and before any container runs. `all` removes every address there; `default` keeps later interfaces
        // without; eth0's own (IFNAME) is named too, as docs/install.md shows operators.
        {
          type: 'tuning',
          sysctl: {
            'net.ipv6.conf.all.disable_ipv6': '1',
            'net.ipv6.conf.default.disable_ipv6': '1',
            'net.ipv6.conf.IFNAME.disable_ipv6': '1',
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )
}

/**
 * Whether the node's pods get IPv6 addresses (link-local at least): the kernel gives every interface of a new network
 * namespace one unless the CNI configuration turns IPv6 off there. kube-router polices IPv4 only.
 */
export function podsHaveIpv6(): boolean {
  return !cniConflist().includes('disable_ipv6')
}

export function kubeletConfig(paths: NodePaths): string {
  return JSON.stringify(
    {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      address: NODE_IP,
      port: KUBELET_PORT,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort: 10248,
      // The API server calls the kubelet (logs, exec) without a client certificate here: the suite checks who can
      // reach port 10250, not the kubelet's own authentication.
      authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
      authorization: { mode: 'AlwaysAllow' },
      containerRuntimeEndpoint: `unix://${paths.socket}`,
      cgroupDriver: 'cgroupfs',
      // This machine mounts cgroup v1 hierarchies (only a warning in Kubernetes 1.37 when allowed).
      failCgroupV1: false,
      cgroupRoot: paths.cgroupRoot,
      clusterDNS: [DNS_SERVICE_IP],
      clusterDomain: 'cluster.local',
      resolvConf: paths.resolvConf,
      failSwapOn: false,
      // Refuse to change host-wide kernel settings: the suite shows the kubelet the values it wants through files
      // bind-mounted in its own mount namespace (namespace.ts), so the host's stay as they are.
      protectKernelDefaults: true,
      // A shared machine's disk and memory are not this node's to guard: no eviction, no image garbage collection
      // (the imported test images cannot be pulled again).
      evictionHard: {
        'memory.available': '1Mi',
        'nodefs.available': '1%',
        'nodefs.inodesFree': '1%',
        'imagefs.available': '1%',
      },
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      // Status of a pod sooner in the API (the default 10 s node status is not what pods use).
      nodeStatusUpdateFrequency: '10s',
      rotateCertificates: false,
      serializeImagePulls: false,
      maxPods: 110,
    },
    null,
    2,
  )
}

export function kubeProxyConfig(kubeconfig: string): string {
  return JSON.stringify(
    {
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      clientConnection: { kubeconfig },
      hostnameOverride: NODE_NAME,
      mode: 'iptables',
      clusterCIDR: POD_CIDR,
      bindAddress: NODE_IP,
      healthzBindAddress: '127.0.0.1:10256',
      metricsBindAddress: '127.0.0.1:10249',
      nodePortAddresses: [`${NODE_IP}/32`],
      // 0: leave the connection-tracking sysctls alone (nf_conntrack_max is host-wide).
      conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    },
    null,
    2,
  )
}

export { NODE_NAME }
