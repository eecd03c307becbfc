// Traefik as a cluster runs it: a pod in namespace `traefik` (the product's expose policy admits HTTP and TLS
// traffic only from the ingress controller's namespace), watching Ingresses and its own CRDs, with the entry
// points the project's Traefik components name: `websecure` (HTTPS) and `tcpsecure` (TLS by SNI), and `web`
// (plain HTTP, where Ingresses without a TLS secret are served). Its
// certificate is Traefik's default (self-signed): clients of the tests do not check it, they check who answers.
import { image } from './layout.js'

export const TRAEFIK_NAMESPACE = 'traefik'
export const TRAEFIK_PORTS = { web: 8000, websecure: 8443, tcpsecure: 9443, ping: 8080 }

/** `gateway`: also its Gateway API provider (the Gateway API CRDs must be installed first). */
export function traefikManifests(options: { gateway?: boolean } = {}): string {
  const objects = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: TRAEFIK_NAMESPACE } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'traefik', namespace: TRAEFIK_NAMESPACE } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'challenge-hooks-test:traefik' },
      // What its Kubernetes providers read (routes, the Services and EndpointSlices behind them, TLS Secrets).
      rules: [
        { apiGroups: [''], resources: ['services', 'secrets', 'nodes', 'configmaps'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
        {
          apiGroups: ['networking.k8s.io'],
          resources: ['ingresses', 'ingressclasses'],
          verbs: ['get', 'list', 'watch'],
        },
        { apiGroups: ['networking.k8s.io'], resources: ['ingresses/status'], verbs: ['update'] },
        { apiGroups: ['traefik.io'], resources: ['*'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['gateway.networking.k8s.io'], resources: ['*'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['gateway.networking.k8s.io'], resources: ['*/status'], verbs: ['update', 'patch'] },
        { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'challenge-hooks-test:traefik' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'challenge-hooks-test:traefik' },
      subjects: [{ kind: 'ServiceAccount', name: 'traefik', namespace: TRAEFIK_NAMESPACE }],
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'traefik', namespace: TRAEFIK_NAMESPACE },
      spec: {
        replicas: 1,
        selector: { matchLabels: { 'app.kubernetes.io/name': 'traefik' } },
        template: {
          metadata: { labels: { 'app.kubernetes.io/name': 'traefik' } },
          spec: {
            serviceAccountName: 'traefik',
            containers: [
              {
                name: 'traefik',
                image: image('traefik'),
                imagePullPolicy: 'Never',
                args: [
                  `--entrypoints.web.address=:${TRAEFIK_PORTS.web}`,
                  `--entrypoints.websecure.address=:${TRAEFIK_PORTS.websecure}`,
                  `--entrypoints.tcpsecure.address=:${TRAEFIK_PORTS.tcpsecure}`,
                  `--entrypoints.traefik.address=:${TRAEFIK_PORTS.ping}`,
                  '--ping=true',
                  '--providers.kubernetescrd=true',
                  '--providers.kubernetesingress=true',
                  ...(options.gateway === true ? ['--providers.kubernetesgateway=true'] : []),
                  '--log.level=INFO',
                  '--global.checknewversion=false',
                  '--global.sendanonymoususage=false',
                ],
                readinessProbe: { httpGet: { path: '/ping', port: TRAEFIK_PORTS.ping }, periodSeconds: 1 },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
              },
            ],
          },
        },
      },
    },
  ]
  return objects.map((object) => JSON.stringify(object)).join('\n---\n')
}
