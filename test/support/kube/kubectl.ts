// The built kubectl, run asynchronously: the hook server and the Metacontroller stand-in share this process's
// event loop, and a blocking spawnSync would stall them for the command's whole run.
import { spawn } from 'node:child_process'

export interface KubectlResult {
  code: number
  stdout: string
  stderr: string
}

export type Kubectl = (args: string[], options?: { input?: string; cwd?: string }) => Promise<KubectlResult>

/** A kubectl bound to one binary and one kubeconfig. */
export function kubectlFor(binary: string, kubeconfig: string): Kubectl {
  return (args, options = {}) =>
    new Promise((resolve, reject) => {
      const child = spawn(binary, [`--kubeconfig=${kubeconfig}`, ...args], {
        cwd: options.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...process.env, KUBECTL_INTERACTIVE_DELETE: 'false' },
      })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
      child.on('error', reject)
      child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }))
      // kubectl may exit before it reads its input (a command that takes none, or one refused at once): the write
      // then fails with EPIPE, which is no error of the command's; its exit code and stderr say what happened.
      child.stdin.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EPIPE') reject(error)
      })
      child.stdin.end(options.input ?? '')
    })
}

/** Runs kubectl and throws with its stderr unless it exits 0. */
export async function kubectlOk(
  kubectl: Kubectl,
  args: string[],
  options?: { input?: string; cwd?: string },
): Promise<KubectlResult> {
  const result = await kubectl(args, options)
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${result.code}): ${result.stderr.trim()}`)
  return result
}
