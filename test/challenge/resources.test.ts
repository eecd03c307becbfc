import t from 'tap'
import { quantityValue, resourcesProblem } from '../../src/challenge/resources.js'

t.test('quantities are read as the API server reads them', async (t) => {
  const cases: [string | number, number | undefined][] = [
    ['500m', 0.5],
    ['1.5', 1.5],
    ['+2', 2],
    ['.5', 0.5],
    ['5.', 5],
    ['64Mi', 64 * 2 ** 20],
    ['1Ki', 1024],
    ['1Ei', 2 ** 60],
    ['1k', 1000],
    ['2G', 2e9],
    ['1E', 1e18],
    ['1e3', 1000],
    ['1E-3', 0.001],
    ['100n', 1e-7],
    ['3u', 3e-6],
    ['.55', 0.55],
    ['1e10', 1e10],
    ['2E-3', 0.002],
    [0, 0],
    [2.5, 2.5],
    ['1e999', undefined],
    ['lots', undefined],
    ['1K', undefined],
    ['-1', undefined],
    ['1.2.3', undefined],
    ['', undefined],
    [-1, undefined],
    [Number.POSITIVE_INFINITY, undefined],
  ]
  for (const [quantity, value] of cases) t.equal(quantityValue(quantity), value, String(quantity))
})

t.test(
  'a request above its limit by no more than the rounding of a float (a millionth of a millionth) is not refused',
  async (t) => {
    // 1 × (1 + 1e-12) is the double 1.000000000001: the largest request the rounding allows beside a limit of 1.
    const container = (request: string) => ({
      name: 'web',
      image: 'ghcr.io/example/web:1',
      resources: { requests: { cpu: request }, limits: { cpu: '1' } },
    })
    t.equal(resourcesProblem(container('1.000000000001'), 'spec.pod.containers[0]', []), undefined)
    t.equal(
      resourcesProblem(container('1.000000000002'), 'spec.pod.containers[0]', []),
      'spec.pod.containers[0].resources.requests.cpu: 1.000000000002 is above its limit 1',
    )
  },
)
