/** A server's RSS and CPU time, read from /proc. */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100
  } catch {
    return 100
  }
})()

export function rssMb(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) / 1024 : Number.NaN
  } catch {
    return Number.NaN
  }
}

export function cpuSeconds(pid: number): number {
  try {
    // Fields after the command (in parentheses) start with the state, field 3; utime is field 14, stime 15.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK
  } catch {
    return Number.NaN
  }
}

/** Samples a process's RSS every 100 ms until stopped; returns the largest. */
export function rssSampler(pid: number): { stop(): number } {
  let max = rssMb(pid)
  const timer = setInterval(() => {
    const now = rssMb(pid)
    if (now > max) max = now
  }, 100)
  return {
    stop() {
      clearInterval(timer)
      const now = rssMb(pid)
      return now > max ? now : max
    },
  }
}
