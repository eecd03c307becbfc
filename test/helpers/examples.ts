// The example ChallengeDefinitions of manifests/examples/ (web-login: HTTP, pwn-echo: NodePort, pwn-tls: TLS), as
// objects in the challenges namespace, for the e2e and cluster suites and bench:rush.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import type { KubeObject } from '../support/simulator/index.js'
import { repoRoot } from './manifests.js'
import type { Json } from './world.js'

const NAMESPACE = 'challenges'

function yamlDocuments(file: string): Json[] {
  return parseAllDocuments(readFileSync(join(repoRoot, file), 'utf8'))
    .map((doc) => doc.toJS() as Json | null)
    .filter((value): value is Json => value !== null)
}

const EXAMPLES: Record<string, KubeObject> = {}
for (const file of [
  'manifests/examples/web-login.yaml',
  'manifests/examples/pwn-echo.yaml',
  'manifests/examples/tls/pwn-tls.yaml',
]) {
  for (const doc of yamlDocuments(file)) {
    if (doc.kind === 'ChallengeDefinition') {
      const object = doc as unknown as KubeObject
      EXAMPLES[object.metadata.name] = object
    }
  }
}

export type ExampleName = 'web-login' | 'pwn-echo' | 'pwn-tls'

export function example(name: ExampleName, spec: Json = {}, rename?: string): KubeObject {
  const base = structuredClone(EXAMPLES[name]) as KubeObject
  return {
    ...base,
    metadata: { ...base.metadata, name: rename ?? name, namespace: NAMESPACE },
    spec: { ...(base.spec as Json), ...spec },
  }
}
