import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as oauth from "openid-client"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { configuration, covers, protectedResource } from "../../../src/auth/Client.js"

/** An authorization server's metadata and token endpoint, and a protected resource's metadata, on 127.0.0.1. */
let server: http.Server
let base: string
let methods: Array<string> | undefined
const tokenRequests: Array<{ authorization: string | undefined; body: string }> = []

beforeAll(async () => {
  server = http.createServer((request, response) => {
    let body = ""
    request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")))
    request.on("end", () => {
      const json = (value: unknown) => {
        response.writeHead(200, { "content-type": "application/json" })
        response.end(JSON.stringify(value))
      }
      if (request.url === "/.well-known/oauth-authorization-server") {
        return json({
          issuer: base,
          token_endpoint: `${base}/token`,
          ...(methods === undefined ? {} : { token_endpoint_auth_methods_supported: methods })
        })
      }
      if (request.url === "/.well-known/oauth-protected-resource") return json({ resource: base, authorization_servers: [base] })
      if (request.url === "/token") {
        tokenRequests.push({ authorization: request.headers.authorization, body })
        return json({ access_token: "t", token_type: "Bearer", expires_in: 60 })
      }
      response.writeHead(404).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => void server.close())

const client = { client_id: "pre-registered-client", client_secret: "pre-registered-secret" }

describe("the client's authentication at the token endpoint", () => {
  it("uses client_secret_basic when the server says nothing, encoding only what must be", async () => {
    methods = undefined
    tokenRequests.length = 0
    await oauth.clientCredentialsGrant(await configuration(base, client))
    // A hyphen stays a hyphen: servers that do not decode the header would refuse %2D.
    expect(tokenRequests[0]?.authorization).toBe(`Basic ${btoa("pre-registered-client:pre-registered-secret")}`)
    expect(tokenRequests[0]?.body).not.toContain("client_secret")
  })

  it("uses client_secret_post when that is all the server accepts, or what the client was registered with", async () => {
    methods = ["client_secret_post"]
    tokenRequests.length = 0
    await oauth.clientCredentialsGrant(await configuration(base, client))
    expect(tokenRequests[0]?.authorization).toBeUndefined()
    expect(new URLSearchParams(tokenRequests[0]?.body).get("client_secret")).toBe("pre-registered-secret")
    methods = undefined
    await oauth.clientCredentialsGrant(await configuration(base, { ...client, token_endpoint_auth_method: "client_secret_post" }))
    expect(new URLSearchParams(tokenRequests[1]?.body).get("client_secret")).toBe("pre-registered-secret")
  })
})

describe("which resource a token is for", () => {
  it("covers the URL itself and the paths below it on the same origin, nothing else", () => {
    expect(covers("https://mcp.example.com/mcp", "https://mcp.example.com/mcp/")).toBe(true)
    expect(covers("https://mcp.example.com", "https://mcp.example.com/mcp")).toBe(true)
    expect(covers("https://mcp.example.com/mcp", "https://mcp.example.com/mcp2")).toBe(false)
    expect(covers("https://mcp.example.com/mcp", "https://mcp.example.com/")).toBe(false)
    expect(covers("https://mcp.example.com", "https://evil.example.com/mcp")).toBe(false)
  })

  it("accepts protected-resource metadata for the server's origin when the path has none", async () => {
    const found = await protectedResource(`${base}/mcp`)
    expect(found).toEqual({ resource: base, issuer: base, scopesSupported: [] })
  })
})
