/** The little of oidc-provider's API the tests use (it ships no types of its own). */
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http"
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>)
    callback(): (request: IncomingMessage, response: ServerResponse) => void
  }
}
