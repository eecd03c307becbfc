#!/usr/bin/env node
/** The author preview command (src/preview-command.ts): `challenge-hooks render <definition.yaml> <challenge.yaml>`. */
import { readFileSync } from 'node:fs'
import { runCli } from './preview-command.js'

process.exitCode = runCli(process.argv.slice(2), {
  readFile: (path) => readFileSync(path, 'utf8'),
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  now: () => new Date(),
})
