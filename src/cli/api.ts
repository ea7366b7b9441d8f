import type { ApiResponse, CallOptions } from '../client/index.js';
import type { EndpointInput, EndpointName, EndpointOutput } from '../contract/endpoints.js';
import type { CommandContext } from './context.js';

/** Calls an endpoint with the context's client; `raw` is what `--json` prints. */
export async function call<K extends EndpointName>(ctx: CommandContext, name: K, input?: EndpointInput<K>, options?: CallOptions): Promise<ApiResponse<EndpointOutput<K>>> {
  const client = await ctx.client();
  return client.request(name, input, options);
}
