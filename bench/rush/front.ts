// Hook server replicas behind one address, for the rush's fault run (bench/README.md, "Faults during the rush").
// In a cluster the hook's Service spreads Metacontroller's connections over the ready pods (kube-proxy picks an
// endpoint per connection; a connection already open stays with its pod). Here a round-robin TCP front on loopback
// does the same: each new connection goes to the next replica in rotation, bytes are piped both ways, and a
// replica taken out of rotation keeps the connections it has until it closes them. A rolling restart is
// `kubectl rollout restart`'s with maxSurge 1 and maxUnavailable 0 (a Deployment of two at the default 25 %): for
// each old replica, a new one is started, put in rotation once its /readyz answers, then the old one is taken out
// of rotation (its endpoint removed) and sent SIGTERM; it drains (its answers say `Connection: close`) and exits.
import { createServer, connect, type Server, type Socket } from 'node:net'
import { cpuSeconds, rssMiB, type Sample } from './measure.js'
import { scrape, startHookServer, type HookServer, type HookServerOptions, type RunContext } from './processes.js'

export class RoundRobinFront {
  readonly #server: Server
  readonly #sockets = new Set<Socket>()
  #rotation: number[] = []
  #next = 0
  /** connections sent to each port */
  readonly connections = new Map<number, number>()
  /** connections refused for want of a replica in rotation */
  refused = 0

  private constructor(server: Server) {
    this.#server = server
  }

  static async listen(): Promise<RoundRobinFront> {
    const server = createServer()
    const front = new RoundRobinFront(server)
    server.on('connection', (socket) => front.#accept(socket))
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
    return front
  }

  get url(): string {
    const address = this.#server.address()
    return `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  }

  add(port: number): void {
    if (!this.#rotation.includes(port)) this.#rotation.push(port)
  }

  remove(port: number): void {
    this.#rotation = this.#rotation.filter((p) => p !== port)
  }

  #accept(socket: Socket): void {
    this.#sockets.add(socket)
    socket.once('close', () => this.#sockets.delete(socket))
    if (this.#rotation.length === 0) {
      this.refused++
      socket.destroy()
      return
    }
    const port = this.#rotation[this.#next++ % this.#rotation.length] as number
    this.connections.set(port, (this.connections.get(port) ?? 0) + 1)
    const upstream = connect(port, '127.0.0.1')
    this.#sockets.add(upstream)
    upstream.once('close', () => this.#sockets.delete(upstream))
    socket.pipe(upstream).pipe(socket)
    // Either side closing or failing ends the pair, as a connection through kube-proxy ends with its pod's socket.
    socket.on('error', () => upstream.destroy())
    upstream.on('error', () => socket.destroy())
    socket.on('close', () => upstream.destroy())
    upstream.on('close', () => socket.destroy())
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy()
    await new Promise<void>((done) => this.#server.close(() => done()))
  }
}

interface Retired {
  samples: Sample[]
  cpu: number
}

/** The hook server's replicas, their front, and what the retired ones counted before they were stopped. */
export class HookPool {
  readonly #context: RunContext
  readonly #options: HookServerOptions
  readonly #front: RoundRobinFront
  #live: HookServer[] = []
  readonly #retired: Retired[] = []
  #started = 0

  private constructor(context: RunContext, options: HookServerOptions, front: RoundRobinFront) {
    this.#context = context
    this.#options = options
    this.#front = front
  }

  static async start(context: RunContext, options: HookServerOptions, replicas: number): Promise<HookPool> {
    const front = await RoundRobinFront.listen()
    context.cleanups.push(() => front.close())
    const pool = new HookPool(context, options, front)
    for (let i = 0; i < replicas; i++) pool.#put(await pool.#startOne())
    return pool
  }

  get url(): string {
    return this.#front.url
  }

  get sizesFile(): string {
    return (this.#live[0] as HookServer).sizesFile
  }

  get metricsUrls(): string[] {
    return this.#live.map((server) => server.metricsUrl)
  }

  /** connections the front sent to each replica's port, and those it refused with no replica in rotation */
  get front(): { connections: Record<string, number>; refused: number } {
    return {
      connections: Object.fromEntries([...this.#front.connections].map(([port, n]) => [String(port), n])),
      refused: this.#front.refused,
    }
  }

  async #startOne(): Promise<HookServer> {
    this.#started++
    return startHookServer(this.#context, { ...this.#options, name: String(this.#started) })
  }

  #put(server: HookServer): void {
    this.#live.push(server)
    this.#front.add(server.port)
  }

  /** Every replica's samples (summed by whoever reads them): the live ones scraped now, the retired ones' last. */
  async samples(): Promise<Sample[]> {
    const live = await Promise.all(this.#live.map((server) => scrape(server.metricsUrl)))
    return [...this.#retired.flatMap((r) => r.samples), ...live.flat()]
  }

  cpuSeconds(): number {
    return this.#retired.reduce((sum, r) => sum + r.cpu, 0) + this.#live.reduce((sum, x) => sum + cpuSeconds(x.pid), 0)
  }

  rssMiB(): number {
    return this.#live.reduce((sum, x) => sum + rssMiB(x.pid), 0)
  }

  /**
   * A rolling restart: for each replica of now, a new one is started and put in rotation once ready, then the old
   * one leaves the rotation and gets SIGTERM (its last scrape and CPU kept for the figures; calls it answers while
   * draining are not in them). Resolves once every old replica has exited; returns each step's time (ms from `t0`).
   */
  async roll(t0: number): Promise<Array<{ step: string; atSeconds: number }>> {
    const steps: Array<{ step: string; atSeconds: number }> = []
    const mark = (step: string) => steps.push({ step, atSeconds: Math.round((Date.now() - t0) / 100) / 10 })
    const stopping: Array<Promise<void>> = []
    for (const old of [...this.#live]) {
      const next = await this.#startOne()
      this.#put(next)
      mark(`replica ${this.#started} ready`)
      this.#front.remove(old.port)
      this.#live = this.#live.filter((x) => x !== old)
      this.#retired.push({ samples: await scrape(old.metricsUrl), cpu: cpuSeconds(old.pid) })
      mark(`replica on port ${old.port} out of rotation, SIGTERM`)
      stopping.push(old.stop().then(() => void mark(`replica on port ${old.port} exited`)))
    }
    await Promise.all(stopping)
    return steps
  }
}
