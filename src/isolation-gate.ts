// The isolation gate's process entry (`node dist/isolation-gate.js`, the init container of every instance's pod):
// gate.ts is the program, tested in-process.
import { podIo, runGate } from './gate.js'

process.exitCode = await runGate(process.env, podIo())
