// envtest's Eventually: poll until a check passes or a deadline passes, and say what was last seen.

export interface EventuallyOptions {
  timeoutMs?: number
  intervalMs?: number
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
  const deadline = Date.now() + (options.timeoutMs ?? 30_000)
  let lastError: string
  for (;;) {
    try {
      const value = await check()
      if (value !== undefined && value !== false) return value
      lastError = ''
    } catch (error) {
      lastError = (error as Error).message
    }
    if (Date.now() > deadline) {
      const seen = await Promise.resolve(describe()).catch((error: Error) => `(describe failed: ${error.message})`)
      throw new Error(
        `timed out after ${(options.timeoutMs ?? 30_000) / 1000} s waiting for ${what}${lastError ? `; last error: ${lastError}` : ''}${seen ? `; last seen: ${seen}` : ''}`,
      )
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100))
  }
}
