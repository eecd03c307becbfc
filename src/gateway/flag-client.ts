/**
 * The gateway's side of the hook server's POST /flags/verify (src/http/routes/flags.ts): the gateway holds no
 * FLAG_SECRET, so it sends the candidates and the submission there. Any failure to get an answer is Unavailable
 * (503 with Retry-After): the check changed nothing and can be repeated.
 */
import type { FlagCheck } from '../challenge/flag-check.js'
import { ServedBy } from '../contract/api.js'
import { Unavailable, type Json } from './kube.js'

export function flagChecker(url: string, token: string, timeoutMs: number): (body: Json) => Promise<FlagCheck> {
  return async (body) => {
    let response: Response
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      })
    } catch (error) {
      throw new Unavailable(`the flag check cannot be reached: ${(error as Error).message}`)
    }
    if (response.status !== 200) {
      throw new Unavailable(`the flag check answered ${response.status}: ${(await response.text()).slice(0, 200)}`)
    }
    return (await response.json()) as FlagCheck
  }
}

/**
 * The uid a PerInstance flag of this Challenge is made from (docs/api.md#flags): the uid of its warm-pool pod's flag
 * Secret when its run was served from a pool (status.pool, which only the hook writes), else its own uid.
 */
export function flagUid(record: { metadata: { uid?: string }; status?: Record<string, unknown> } | undefined) {
  const pool = record?.status?.pool as Record<string, unknown> | undefined
  const served = pool?.state === ServedBy.Claimed || pool?.state === ServedBy.Released
  return served && typeof pool?.flagUid === 'string' && pool.flagUid !== '' ? pool.flagUid : record?.metadata.uid
}
