/**
 * The MCP SDK's own client of the built CLI over stdio, as an IDE meets the gateway: `client`
 * (made by the test, with its capabilities and handlers) connected to `dist/bin.js --config
 * <config>`, and the gateway's stderr kept.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { BIN } from "./stdioClient.js"

export interface SdkGatewayOptions {
  readonly config: string
  readonly cwd: string
  readonly env: NodeJS.ProcessEnv
  /** The CLI to run (default: this build's dist/bin.js). */
  readonly bin?: string | undefined
}

export const connectSdk = async (
  client: Client,
  options: SdkGatewayOptions
): Promise<{ readonly client: Client; readonly stderr: () => string }> => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [options.bin ?? BIN, "--config", options.config],
    cwd: options.cwd,
    env: Object.fromEntries(Object.entries(options.env).filter((entry): entry is [string, string] => entry[1] !== undefined)),
    stderr: "pipe"
  })
  let stderr = ""
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  await client.connect(transport)
  return { client, stderr: () => stderr }
}
