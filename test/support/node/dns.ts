// Cluster DNS as a clusters runs it: CoreDNS pods labelled k8s-app=kube-dns in kube-system behind the `kube-dns`
// Service (the address every pod's resolv.conf names). The product's isolate policy lets DNS go to exactly these
// pods, so they must be real pods of the node. Nothing is forwarded: no query leaves the machine; the one outside
// name answered is the public stand-in's. No cache: a name looked up before its Service exists must not stay
// unknown for a cache's lifetime (the suite measures when a Service becomes reachable, not a cache).
import { DNS_SERVICE_IP, image, PUBLIC_IP, PUBLIC_NAME } from './layout.js'

const COREFILE = `.:53 {
    errors
    health :8080
    ready :8181
    hosts {
        ${PUBLIC_IP} ${PUBLIC_NAME}
        fallthrough
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
}
`

export function coreDnsManifests(): string {
  const objects = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'coredns', namespace: 'kube-system' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'challenge-hooks-test:coredns' },
      rules: [
        { apiGroups: [''], resources: ['services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'challenge-hooks-test:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'challenge-hooks-test:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' }],
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'coredns', namespace: 'kube-system' },
      data: { Corefile: COREFILE },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'coredns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { 'k8s-app': 'kube-dns' } },
        template: {
          metadata: { labels: { 'k8s-app': 'kube-dns' } },
          spec: {
            serviceAccountName: 'coredns',
            // DNS of the cluster itself: it resolves through nobody.
            dnsPolicy: 'Default',
            containers: [
              {
                name: 'coredns',
                image: image('coredns'),
                imagePullPolicy: 'Never',
                args: ['-conf', '/etc/coredns/Corefile'],
                ports: [
                  { name: 'dns', containerPort: 53, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
                ],
                readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 1 },
                livenessProbe: { httpGet: { path: '/health', port: 8080 }, periodSeconds: 10 },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
                resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '128Mi' } },
              },
            ],
            volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: {
        clusterIP: DNS_SERVICE_IP,
        selector: { 'k8s-app': 'kube-dns' },
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
          { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
        ],
      },
    },
  ]
  return objects.map((object) => JSON.stringify(object)).join('\n---\n')
}
