// What an operator does to install the project on a cluster (docs/install.md): Metacontroller's CRDs, namespace and
// service account, then the manifests (with components, through an overlay), then the Secret. Used by the cluster
// suite (test/support/kube/harness.ts), `npm run start:cluster` (cli.ts) and bench:rush.
import { randomBytes } from 'node:crypto'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { METACONTROLLER_CRDS_FILE } from '../../helpers/manifests.js'
import { repoRoot } from './controlplane.js'
import { kubectlOk, type Kubectl } from './kubectl.js'
import type { Rest } from './rest.js'

export interface ClusterEnv {
  kubeconfig: string
  kubectl: Kubectl
  /** the admin */
  rest: Rest
  /** the suite's own throwaway control plane (false: an existing cluster, where the suite only touches its own) */
  owned: boolean
}

/**
 * What an operator does: Metacontroller's CRDs and its namespace and service account (as its own install makes
 * them), then `kubectl apply --server-side -k manifests/`. Idempotent; returns kubectl's output of the apply.
 */
export async function install(env: ClusterEnv, components: string[] = []): Promise<{ stdout: string; stderr: string }> {
  // Vendored in test/data/ (upstream's v4.17.2 file): a missing file fails here, never a stand-in.
  const crds = readFileSync(METACONTROLLER_CRDS_FILE, 'utf8')
  await kubectlOk(env.kubectl, ['apply', '--server-side', '-f', '-'], { input: crds })
  await kubectlOk(env.kubectl, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/compositecontrollers.metacontroller.k8s.io',
  ])
  await kubectlOk(env.kubectl, ['apply', '--server-side', '-f', '-'], { input: METACONTROLLER_IDENTITY })
  // With components, an overlay as an operator writes one: manifests/ plus manifests/components/<name>.
  const overlay = components.length === 0 ? undefined : mkdtempSync(join(tmpdir(), 'challenge-hooks-overlay-'))
  if (overlay !== undefined) {
    const kustomization = {
      resources: [relative(overlay, join(repoRoot, 'manifests'))],
      components: components.map((name) => relative(overlay, join(repoRoot, 'manifests/components', name))),
    }
    writeFileSync(join(overlay, 'kustomization.yaml'), JSON.stringify(kustomization))
  }
  const applied = await kubectlOk(
    env.kubectl,
    ['apply', '--server-side', '--force-conflicts', '-k', overlay ?? 'manifests/'],
    { cwd: repoRoot },
  ).finally(() => {
    if (overlay !== undefined) rmSync(overlay, { recursive: true, force: true })
  })
  await kubectlOk(env.kubectl, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/challenges.challenge-hooks.dev',
    'crd/challengedefinitions.challenge-hooks.dev',
    'crd/challengeauthors.challenge-hooks.dev',
  ])
  await registerAuthors(env, 'challenges')
  await installSecrets(env)
  // The register docs/install.md has the operator write in `challenges`: its example, as it is.
  await kubectlOk(env.kubectl, ['apply', '--server-side', '-n', 'challenges', '-f', AUTHORS_EXAMPLE], { cwd: repoRoot })
  await definitionNamesEnforced(env)
  return { stdout: applied.stdout, stderr: applied.stderr }
}

/** docs/examples/challenge-authors.yaml: alice and bob of example.org, and the names each may create. */
export const AUTHORS_EXAMPLE = 'docs/examples/challenge-authors.yaml'

/**
 * The register of authors of a namespace (the ChallengeAuthors named `authors`), replaced by `authors` (each
 * `{user, definitionNames, ...}`): an operator's write. Without one nobody, operators included, creates a
 * ChallengeDefinition there (the policy challenge-hooks-definition-names).
 */
export async function registerAuthors(
  env: ClusterEnv,
  namespace: string,
  authors: readonly Record<string, unknown>[] = SUITE_AUTHORS,
): Promise<void> {
  const register = {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeAuthors',
    metadata: { name: 'authors', namespace },
    spec: { authors },
  }
  await kubectlOk(env.kubectl, ['apply', '--server-side', '--force-conflicts', '-f', '-'], {
    input: JSON.stringify(register),
  })
}

/**
 * Until the API server has started the informer of a new paramKind, a policy that names it refuses every request
 * ("paramKind ... not yet synced"): waits until a definition could be created in `challenges` (a dry run, as the
 * admin, an operator), so that the first test's writes meet the policies as they will stay.
 */
async function definitionNamesEnforced(env: ClusterEnv): Promise<void> {
  const probe = {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeDefinition',
    metadata: { name: 'install-probe' },
    spec: { pod: { containers: [{ name: 'app', image: 'registry.test/app' }] }, expose: { port: 8080 } },
  }
  let last = ''
  for (let attempt = 0; attempt < 150; attempt++) {
    try {
      await env.rest.call('POST', '/apis/challenge-hooks.dev/v1alpha1/namespaces/challenges/challengedefinitions', {
        body: probe,
        query: { dryRun: 'All' },
      })
      return
    } catch (error) {
      last = (error as Error).message
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`a definition cannot be created in challenges after the install: ${last}`)
}

/**
 * The register of authors the suite's namespaces get (manifests/crds/challengeauthors.yaml): the authors the tests
 * impersonate, with the prefix of the images their definitions name. Operators (the admin) are held by none of the
 * author policies, but the policies that read the register refuse every write of a definition where it is missing.
 */
export const SUITE_AUTHORS: readonly Record<string, unknown>[] = [
  { user: 'alice@example.org', imagePrefixes: ['registry.test/'] },
  { user: 'bob@example.org', imagePrefixes: ['registry.test/'] },
]

/**
 * The Secret, once, as the install of docs/install.md does it: a secrets.env of random values beside a copy of
 * manifests/secrets/, then `kubectl apply -k`. Kept when it exists: a running Metacontroller holds its token.
 */
async function installSecrets(env: ClusterEnv): Promise<void> {
  const existing = await env.kubectl([
    'get',
    'secret',
    'challenge-hooks-secrets',
    '-n',
    'challenge-hooks',
    '-o',
    'name',
  ])
  if (existing.stdout.trim() !== '') return
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-secrets-'))
  try {
    cpSync(join(repoRoot, 'manifests/secrets'), dir, { recursive: true })
    const random = () => randomBytes(32).toString('hex')
    writeFileSync(join(dir, 'secrets.env'), `FLAG_SECRET=${random()}\nHOOK_TOKEN=${random()}\n`)
    await kubectlOk(env.kubectl, ['apply', '--server-side', '-k', dir])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Metacontroller's namespace and service account, as its upstream install creates them. */
const METACONTROLLER_IDENTITY = `apiVersion: v1
kind: Namespace
metadata:
  name: metacontroller
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: metacontroller
  namespace: metacontroller
`
