/** The gateway's process entry: the real environment and signals for startGateway() (src/gateway/main.ts). */
import closeWithGrace from 'close-with-grace'
import { startGateway } from './gateway/main.js'

await startGateway({
  env: process.env,
  stderr: process.stderr,
  exit: (code) => process.exit(code),
  onShutdown: (shutdown) => closeWithGrace({ delay: 10_000, logger: false }, shutdown),
})
