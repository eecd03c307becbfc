// client-go's rate-limited work queue, reduced to one worker and a virtual clock (times in ms):
// a key is queued at most once, delayed adds keep the earliest time, failures back off exponentially.

const BASE_BACKOFF_MS = 5
const MAX_BACKOFF_MS = 1000 * 1000

export class WorkQueue {
  readonly #ready: string[] = []
  readonly #waiting = new Map<string, number>()
  readonly #failures = new Map<string, number>()

  add(key: string): void {
    if (!this.#ready.includes(key)) this.#ready.push(key)
  }

  /** Queue `key` at `dueMs`; an earlier pending time for the same key wins. Due times not after `nowMs` queue now. */
  addAt(key: string, dueMs: number, nowMs: number): void {
    if (dueMs <= nowMs) return this.add(key)
    this.#waiting.set(key, Math.min(dueMs, this.#waiting.get(key) ?? dueMs))
  }

  /** Retry after a failure: 5 ms doubling per consecutive failure, at most 1000 s. */
  addRateLimited(key: string, nowMs: number): void {
    const failures = this.#failures.get(key) ?? 0
    this.#failures.set(key, failures + 1)
    this.addAt(key, nowMs + Math.min(BASE_BACKOFF_MS * 2 ** failures, MAX_BACKOFF_MS), nowMs)
  }

  /** A success resets the backoff. */
  forget(key: string): void {
    this.#failures.delete(key)
  }

  /** Moves delayed keys whose time has come to the ready queue. */
  promote(nowMs: number): void {
    for (const [key, dueMs] of [...this.#waiting].sort((a, b) => a[1] - b[1])) {
      if (dueMs > nowMs) continue
      this.#waiting.delete(key)
      this.add(key)
    }
  }

  /** Takes the next ready key (a worker's Get). */
  take(): string | undefined {
    return this.#ready.shift()
  }

  remove(key: string): void {
    const index = this.#ready.indexOf(key)
    if (index >= 0) this.#ready.splice(index, 1)
  }

  ready(): string[] {
    return [...this.#ready]
  }

  dueAt(key: string): number | undefined {
    return this.#waiting.get(key)
  }

  nextDue(): number | undefined {
    const times = [...this.#waiting.values()]
    return times.length === 0 ? undefined : Math.min(...times)
  }
}
