/**
 * POST /flags/verify: the gateway's flag check (../../challenge/flag-check.ts), on the hook port but apart from the
 * hooks. Registered only when FLAG_VERIFY_TOKEN is set, and only for callers bearing it: an answer says whether a
 * guess is some owner's flag. The NetworkPolicy of the gateway component lets only the gateway's pods reach it.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { checkFlag, FlagCheckRequestSchema, type FlagCheckRequest } from '../../challenge/flag-check.js'
import type { Config } from '../../config/config.js'
import { requireBearer } from '../auth.js'

export const FLAG_VERIFY_PATH = '/flags/verify'

/** The plugin (encapsulated: its bearer token guards its own route only). */
export async function flagRoutes(app: FastifyInstance, { config }: { config: Config }): Promise<void> {
  const token = config.flagVerifyToken
  if (token === undefined) return
  const flags = app.withTypeProvider<TypeBoxTypeProvider>()
  flags.addHook('onRequest', requireBearer([token], 'FLAG_VERIFY_TOKEN', 'route'))
  flags.post(
    FLAG_VERIFY_PATH,
    { schema: { body: FlagCheckRequestSchema } },
    async (request: FastifyRequest<{ Body: FlagCheckRequest }>) => {
      const answer = checkFlag(request.body, config.flagSecret)
      // Who asked about which definition and what came out; never the flag.
      request.log.info(
        {
          route: FLAG_VERIFY_PATH,
          namespace: request.body.namespace,
          definition: request.body.definition,
          result: answer.result,
        },
        'flag checked',
      )
      return answer
    },
  )
}
