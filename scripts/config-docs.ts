// `npm run write:config-docs`: writes docs/configuration.md and the comments of manifests/config.env from the table of
// variables in src/config/config.ts (the values of config.env stay as they are). test/http/config-docs.test.ts fails
// when either file differs from what this writes.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { configEnv, configurationPage } from '../src/config/config-docs.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const envFile = join(root, 'manifests/config.env')
mkdirSync(join(root, 'docs'), { recursive: true })
writeFileSync(join(root, 'docs/configuration.md'), configurationPage())
writeFileSync(envFile, configEnv(readFileSync(envFile, 'utf8')))
console.log('wrote docs/configuration.md and manifests/config.env')
