// What happened on the cluster, from watches: every status transition of the Challenges and every deletion.
import { eventually } from '../eventually.js'
import { Informer } from './informer.js'
import type { Rest } from './rest.js'
import type { WatchEvent } from '../simulator/index.js'
import type { ResourceType } from '../simulator/objects.js'
import type { Json } from '../../helpers/world.js'
import { API } from './names.js'

/**
 * Watches of the Challenges, their children and pods, recording `phase/reason` each time it changes (per
 * `namespace/name`), and `Kind/name` when an object is gone for good (per namespace), in the order seen.
 */
export class Recorder {
  readonly #transitions = new Map<string, string[]>()
  readonly #deletions = new Map<string, string[]>()
  readonly #informers: Informer[]

  constructor(rest: Rest, children: ResourceType[]) {
    const kinds = [
      { apiVersion: API, resource: 'challenges', kind: 'Challenge', statusSubresource: true },
      ...children,
      { apiVersion: 'v1', resource: 'pods', kind: 'Pod', statusSubresource: true },
    ]
    this.#informers = kinds.map((resource) => new Informer(rest, resource))
    for (const informer of this.#informers) informer.on((event) => this.#record(event))
  }

  async start(): Promise<void> {
    await Promise.all(this.#informers.map((informer) => informer.start()))
  }

  stop(): void {
    for (const informer of this.#informers) informer.stop()
  }

  /** `phase/reason` of a Challenge, each time it changed */
  transitions(ns: string, name: string): string[] {
    return [...(this.#transitions.get(`${ns}/${name}`) ?? [])]
  }

  /**
   * The transitions once the watch has caught up with `last`, a status already read from the API server: the watch
   * delivers it some milliseconds after a GET can see it. On timeout, what was seen, for the assertion to show.
   */
  async transitionsThrough(ns: string, name: string, last: string): Promise<string[]> {
    const seen = () => this.transitions(ns, name)
    return eventually(`the watch to see ${ns}/${name} ${last}`, () => seen().at(-1) === last && seen(), undefined, {
      timeoutMs: 10_000,
    }).catch(seen)
  }

  /** `Kind/name` of every object gone from the namespace, in order */
  deletions(ns: string): string[] {
    return [...(this.#deletions.get(ns) ?? [])]
  }

  /** The deletions of the namespace once the watch has seen `last` (`Kind/name`) go; on timeout, what was seen */
  async deletionsThrough(ns: string, last: string): Promise<string[]> {
    const seen = () => this.deletions(ns)
    return eventually(`the watch to see ${last} go from ${ns}`, () => seen().includes(last) && seen(), undefined, {
      timeoutMs: 10_000,
    }).catch(seen)
  }

  #record({ type, object }: WatchEvent): void {
    const ns = String(object.metadata.namespace)
    if (type === 'DELETED') {
      const log = this.#deletions.get(ns) ?? []
      log.push(`${object.kind}/${object.metadata.name}`)
      this.#deletions.set(ns, log)
      return
    }
    if (object.kind !== 'Challenge') return
    const status = (object.status ?? {}) as Json
    if (status.phase === undefined) return
    const key = `${ns}/${object.metadata.name}`
    const seen = this.#transitions.get(key) ?? []
    const now = `${String(status.phase)}/${String(status.reason)}`
    if (seen.at(-1) !== now) seen.push(now)
    this.#transitions.set(key, seen)
  }
}
