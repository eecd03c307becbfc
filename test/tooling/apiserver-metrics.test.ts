// The cluster suite's closing figure (test/support/kube/apiserver-metrics.ts): the writes the API server counted,
// read from its /metrics as Prometheus text. A text without the counter is an error, never "0 writes".
import t from 'tap'
import { countWrites, describeWrites } from '../support/kube/apiserver-metrics.js'

/** As kube-apiserver 1.37 writes it (labels in its order), trimmed to a few samples. */
const METRICS = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 12
apiserver_request_total{code="422",component="apiserver",dry_run="",group="challenge-hooks.dev",resource="challenges",scope="resource",subresource="",verb="POST",version="v1alpha1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PUT",version="v1"} 40
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PUT",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 900
apiserver_request_total{code="500",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="DELETE",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="DELETE",version="v1"} 7
apiserver_request_duration_seconds_count{verb="POST"} 99
`

t.test(
  'the writes are counted by verb, admitted (2xx) and refused (4xx); reads and 5xx are not writes checked',
  async (t) => {
    const counts = countWrites(METRICS)
    t.equal(counts.samples, 8, 'every sample of the counter, reads included')
    t.strictSame(Object.fromEntries(counts.byVerb), {
      POST: { admitted: 12, refused: 3 },
      PUT: { admitted: 40, refused: 2 },
      APPLY: { admitted: 5, refused: 0 },
      DELETE: { admitted: 7, refused: 0 },
    })
    t.equal(
      describeWrites(METRICS),
      'API server checked 69 writes: 64 admitted (apply 5, delete 7, post 12, put 40), 5 refused (4xx)',
    )
  },
)

t.test('a /metrics without the counter is an error: the suite prints no figure it did not read', async (t) => {
  t.throws(() => describeWrites(''), {
    message: "no apiserver_request_total sample in the API server's /metrics (0 bytes read)",
  })
  t.throws(() => describeWrites('{"kind":"Status"}'), /no apiserver_request_total sample/)
  t.equal(countWrites('').samples, 0)
})
