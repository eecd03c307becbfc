/** The process entry: the real environment, signals and timers for start() (src/main.ts). */
import closeWithGrace from 'close-with-grace'
import { setTimeout as sleep } from 'node:timers/promises'
import { start } from './main.js'

await start({
  env: process.env,
  stderr: process.stderr,
  exit: (code) => process.exit(code),
  drain: (ms) => sleep(ms),
  // The drain, then 15 s for in-flight calls; past that close-with-grace exits 1.
  onShutdown: (shutdown, config) => closeWithGrace({ delay: config.shutdownDrainMs + 15000, logger: false }, shutdown),
})
