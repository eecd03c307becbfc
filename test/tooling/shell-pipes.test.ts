// Under `set -o pipefail` a pipeline fails when any of its commands does. A reader that stops early (`head`,
// `grep -q`, `grep -m`) closes the pipe while the writer may still be writing; the writer dies of SIGPIPE, and the
// pipeline fails or not depending on timing: a build script would fail now and then, after its whole build. So no
// script of the project that sets pipefail pipes into such a reader; `sed -n 1p` and `grep -c` read everything.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import t from 'tap'

const EARLY_READER = /(?<![|])\|(?![|])\s*(head\b|grep\s+(?:-\w*[qm]|--quiet|--max-count))/

/** The lines of a pipefail script that pipe into a reader that stops early, as "line N: text". */
function earlyReaders(script: string): string[] {
  if (!/^\s*set\s+-\w*o\s+pipefail/m.test(script)) return []
  return script
    .split('\n')
    .map((line, index) => ({ line, number: index + 1 }))
    .filter(({ line }) => !line.trimStart().startsWith('#') && EARLY_READER.test(line))
    .map(({ line, number }) => `line ${number}: ${line.trim()}`)
}

t.test('the finder: a pipe into head or grep -q under pipefail, and nothing else', async (t) => {
  const script = [
    '#!/usr/bin/env bash',
    'set -euo pipefail',
    '"$dir/etcd" --version | head -n 1 >&2',
    'etcd --version | sed -n 1p',
    'ps aux | grep -q kubelet && echo up',
    'journal | grep -m1 ready',
    'true || head -n 1 file',
    '# a comment | head',
    'count=$(ps | grep -c etcd)',
  ].join('\n')
  t.strictSame(earlyReaders(script), [
    'line 3: "$dir/etcd" --version | head -n 1 >&2',
    'line 5: ps aux | grep -q kubelet && echo up',
    'line 6: journal | grep -m1 ready',
  ])
  t.strictSame(earlyReaders('#!/bin/sh\nset -eu\nls | head -n 1\n'), [], 'without pipefail a reader may stop early')
  t.strictSame(earlyReaders('set -o pipefail\nls | head\n'), ['line 2: ls | head'])
})

t.test('no shell script of the project pipes into a reader that stops early under pipefail', async (t) => {
  const scripts = execFileSync('git', ['ls-files', '*.sh', '.ci/run'], { encoding: 'utf8' })
    .split('\n')
    .filter((file) => file !== '')
  t.ok(scripts.includes('controlplane/build.sh') && scripts.includes('.ci/run'), 'the build scripts are read')
  const findings = scripts.flatMap((file) => earlyReaders(readFileSync(file, 'utf8')).map((f) => `${file} ${f}`))
  t.strictSame(findings, [])
})
