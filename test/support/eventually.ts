// The one polling loop of the tests (envtest's Eventually): poll until a check gives a value or a deadline passes,
// and say what was last seen. waitFor (processes.ts), for a process to be ready, is this loop too.
import { setTimeout as sleep } from 'node:timers/promises'

export interface EventuallyOptions {
  timeoutMs?: number
  intervalMs?: number
  /** Asked before each attempt: a reason to give up at once (a process that exited), or undefined to go on. */
  stopIf?: () => string | undefined
}

/**
 * Calls `check` until it returns a value that is not undefined (or false), and returns that value. On timeout,
 * throws with `what` and the last thing `describe` said about the world (or the last error `check` threw).
 */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  describe: () => Promise<string> | string = () => '',
  options: EventuallyOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000
  const deadline = performance.now() + timeoutMs
  const seen = async () => {
    const text = await Promise.resolve()
      .then(describe)
      .catch((error: Error) => `(describe failed: ${error.message})`)
    return text ? `; last seen: ${text}` : ''
  }
  let lastError: string
  for (;;) {
    const stopped = options.stopIf?.()
    if (stopped !== undefined) throw new Error(`${what}: ${stopped}${await seen()}`)
    try {
      const value = await check()
      if (value !== undefined && value !== false) return value
      lastError = ''
    } catch (error) {
      lastError = (error as Error).message
    }
    if (performance.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs / 1000} s waiting for ${what}${lastError ? `; last error: ${lastError}` : ''}${await seen()}`,
      )
    await sleep(options.intervalMs ?? 100)
  }
}
