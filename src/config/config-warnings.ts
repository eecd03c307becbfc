/**
 * What the hook server says at start about a configuration that is valid but unsafe or useless in production: each
 * a sentence for the log (src/main.ts), and the one the author preview repeats (Internet egress without CLUSTER_CIDRS).
 */
import type { Config } from './config-types.js'

/** A host that names the machine it is read on: players would reach their own (127.0.0.0/8, ::1, localhost). */
const LOOPBACK_HOST = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost|.+\.localhost)$/i

/**
 * Said by the server at start when NodePort endpoints would name a host no player can reach: a loopback address, such
 * as PUBLIC_HOST's default (unset) or the placeholder manifests/config.env ships, both 127.0.0.1. Any definition may
 * expose a NodePort; LoadBalancer endpoints name the load balancer's own address and do not use PUBLIC_HOST.
 */
export function publicHostWarning(config: Pick<Config, 'publicHost'>): string | undefined {
  const host = config.publicHost
  if (!LOOPBACK_HOST.test(host)) return undefined
  return (
    `PUBLIC_HOST is ${host}, a loopback address (127.0.0.1 is its default, when unset): NodePort endpoints will say ${host}, ` +
    `so players will see "nc ${host} <nodePort>", which reaches nothing from their machines. Set PUBLIC_HOST to a node's public name or address.`
  )
}

/** Said wherever Internet egress meets an empty CLUSTER_CIDRS: by the author preview, and by the server at start. */
export const INTERNET_WITHOUT_CLUSTER_CIDRS =
  'network.egress Internet with CLUSTER_CIDRS unset: where nodes have public addresses, instances reach them ' +
  "(the kubelet's 10250, every NodePort, a public API server address). Set CLUSTER_CIDRS to the nodes' and the API server's addresses."

/** Every warning the configuration gives at start, in the order the log shows them. */
export function startupWarnings(config: Config): string[] {
  const warnings: string[] = []
  if (config.flagSecretIsDevelopmentDefault)
    warnings.push('FLAG_SECRET is not set: using the development secret; flags are guessable. Set FLAG_SECRET.')
  if (config.hookToken === undefined) warnings.push('HOOK_TOKEN is not set: anyone who can reach the hook can call it.')
  const publicHost = publicHostWarning(config)
  if (publicHost !== undefined) warnings.push(publicHost)
  // The server cannot know whether a definition uses Internet egress until it syncs one: said once, at start.
  if (config.clusterCidrs.length === 0) warnings.push(`if a definition uses ${INTERNET_WITHOUT_CLUSTER_CIDRS}`)
  return warnings
}
