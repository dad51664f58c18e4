/**
 * The `--http` address: parsing `[HOST:]PORT` and telling loopback hosts from reachable ones. Apart
 * from the HTTP transport so the command line can check an address without loading the server.
 */
import { isIP } from "node:net"

/** `[HOST:]PORT`, with IPv6 hosts in brackets; HOST defaults to 127.0.0.1. Undefined when unreadable. */
export const parseAddress = (text: string): { host: string; port: number } | undefined => {
  const match = /^(?:(\[[^\]]+\]|[^:]+):)?(\d{1,5})$/.exec(text.trim())
  if (match === null) return undefined
  const port = Number(match[2])
  if (port > 65_535) return undefined
  const rawHost = match[1] ?? "127.0.0.1"
  const host = rawHost.startsWith("[") ? rawHost.slice(1, -1) : rawHost
  if (host === "") return undefined
  return { host, port }
}

/** localhost, ::1 and 127.0.0.0/8: reachable from this machine only. */
export const isLoopback = (host: string): boolean => {
  const h = host.toLowerCase()
  return h === "localhost" || h === "::1" || (isIP(h) === 4 && h.startsWith("127."))
}
