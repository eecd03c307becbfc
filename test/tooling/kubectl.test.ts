// The kubectl runner of the cluster and real-node suites (test/support/kube/kubectl.ts): a command that exits before
// it reads its input is answered by its exit code, not by an EPIPE thrown from the write of that input.
import t from 'tap'
import { kubectlFor } from '../support/kube/kubectl.js'

t.test('a command that exits without reading its input: its exit code, no EPIPE', async (t) => {
  const exitsAtOnce = kubectlFor('/bin/true', '/nonexistent')
  const input = 'x'.repeat(4 * 1024 * 1024)
  for (let i = 0; i < 5; i++)
    t.strictSame(await exitsAtOnce(['apply', '-f', '-'], { input }), { code: 0, stdout: '', stderr: '' })
})
