// The hook server's image on the real node, packed as no registry is reachable: the Node binary that runs the suite,
// its shared libraries, the checkout's bundled dist/server.js and the isolation gate bundled afresh from src/ (so the
// gate every instance's pod starts with is the checkout's, built or not), laid out as the Dockerfile lays them out
// (/nodejs/bin/node, /app/dist/...), with the test images' packer, under the reference the product names by
// default: the hook Deployment's image and ISOLATION_GATE_IMAGE's default. Nothing is pulled.
import { execFileSync } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { buildSync } from 'esbuild'
import { loadConfig } from '../../../src/config/config.js'
import { repoRoot } from '../kube/controlplane.js'

/** The reference the hook Deployment (manifests/hook-server.yaml) and every instance's isolation gate name. */
export const HOOK_IMAGE = loadConfig({}).isolationGate.image

/** Packs the image into `dir`/hook-image.tar with the packer beside the test images; its path and size in MB. */
export function packHookImage(imagesTar: string, dir: string): { tar: string; megabytes: number } {
  const server = join(repoRoot, 'dist/server.js')
  if (!existsSync(server)) throw new Error(`${server} is missing: npm run build first`)
  const gate = join(dir, 'isolation-gate.js')
  buildSync({
    entryPoints: [join(repoRoot, 'src/isolation-gate.ts')],
    outfile: gate,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
  })
  const tar = join(dir, 'hook-image.tar')
  // The Node binary and the shared libraries it loads, at the paths its loader looks for them.
  const libraries = [
    ...execFileSync('ldd', [process.execPath], { encoding: 'utf8' }).matchAll(/(\/\S+\.so[^\s]*)/g),
  ].map((match) => match[1] as string)
  const files = [
    `/nodejs/bin/node=${process.execPath}`,
    `/app/package.json=${join(repoRoot, 'package.json')}`,
    `/app/dist/server.js=${server}`,
    `/app/dist/isolation-gate.js=${gate}`,
    ...libraries.map(
      (library) => `${library}=${execFileSync('readlink', ['-f', library], { encoding: 'utf8' }).trim()}`,
    ),
  ]
  execFileSync(join(dirname(imagesTar), 'bin', 'pack'), [
    '-image',
    HOOK_IMAGE,
    '-user',
    '10001:10001',
    '-out',
    tar,
    ...files.flatMap((file) => ['-file', file]),
    '--',
    '/nodejs/bin/node',
    '/app/dist/server.js',
  ])
  return { tar, megabytes: statSync(tar).size / 1e6 }
}
