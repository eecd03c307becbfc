/** The process entry: the real environment, signals and timers for start() (src/main.ts). */
import closeWithGrace from 'close-with-grace'
import { setTimeout as sleep } from 'node:timers/promises'
import { SHUTDOWN_BACKSTOP_MS, start } from './main.js'

await start({
  env: process.env,
  stderr: process.stderr,
  exit: (code) => process.exit(code),
  wait: (ms) => sleep(ms, undefined, { ref: false }),
  // start() exits by itself at SHUTDOWN_TIMEOUT_MS; should it hang past that, close-with-grace exits 1.
  onShutdown: (shutdown, config) =>
    closeWithGrace({ delay: config.shutdownTimeoutMs + SHUTDOWN_BACKSTOP_MS, logger: false }, shutdown),
})
