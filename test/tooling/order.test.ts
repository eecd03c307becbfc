// test/helpers/order.ts: an order between two kinds holds only when both are in the log.
import t from 'tap'
import { orderProblem, span } from '../helpers/order.js'

t.test('orderProblem: both present and in order, or it says what is wrong', async (t) => {
  const log = ['Ingress/a', 'Service/a', 'Pod/a', 'Pod/a', 'NetworkPolicy/a-isolate', 'Secret/a-flag']
  t.equal(orderProblem(log, 'Service', 'Pod'), undefined)
  t.equal(orderProblem(log, 'Pod', 'NetworkPolicy'), undefined)
  t.equal(
    orderProblem(log, 'Pod', 'Service'),
    'a Service (at 1) before the last Pod (at 3): Ingress/a, Service/a, Pod/a, Pod/a, NetworkPolicy/a-isolate, Secret/a-flag',
  )
  t.equal(
    orderProblem(['Service/a', 'Secret/a-flag'], 'Pod', 'Secret'),
    'Pod never in: Service/a, Secret/a-flag',
    'a kind never deleted proves nothing',
  )
  t.equal(orderProblem([], 'Pod', 'Secret'), 'Pod and Secret never in: ')
  t.strictSame(span(log, 'Pod'), { first: 2, last: 3 })
  t.equal(span(log, 'Deployment'), undefined)
  t.strictSame(span(['hook answered', 'closed'], 'closed'), { first: 1, last: 1 }, 'whole entries without a /')
})
