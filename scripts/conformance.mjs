#!/usr/bin/env node
// The official MCP conformance suite (@modelcontextprotocol/conformance, server scenarios), run
// twice against the same server (test/fixtures/conformance-server.mjs): directly over its own
// Streamable HTTP, and as a stdio backend served by the gateway at /servers/conf/mcp. Prints both
// results side by side. The suite runs on the project's own Node (npm scripts run on it).
// Then the 2026-07-28 (stateless) revision's required server scenarios (conformance 0.2.0-alpha,
// `--requirements 2026-07-28`) through /servers/conf/mcp: the fixture speaks the session era, so
// this measures the gateway's bridge. Then the revision's extension scenarios (tasks, SEP-2243
// headers), each at a backend's own endpoint and at /mcp. Last, the suite's client authorization scenarios (`client
// --suite auth`) with the gateway as the OAuth client under test (scripts/conformance-client.mjs).
// Usage: npm run conformance [-- --keep]   (--keep leaves the suites' result folders)
import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const SUITE = join(root, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
const SUITE_NEXT = join(root, "node_modules", "conformance-next", "dist", "index.js")
const REQUIREMENTS_NEXT = join(root, "node_modules", "conformance-next", "requirements", "2026-07-28.yaml")
const FIXTURE = join(root, "test", "fixtures", "conformance-server.mjs")
/** The same suite's 2026-07-28 server, written in that era. */
const MODERN_FIXTURE = join(root, "test", "fixtures", "stateless-conformance-server.mjs")
/** A 2026-07-28 server with the tasks extension, and one that checks the SEP-2243 headers (remote). */
const TASKS_FIXTURE = join(root, "test", "fixtures", "stateless-tasks-server.mjs")
const STRICT_FIXTURE = join(root, "test", "fixtures", "strict-headers-server.mjs")
/** The 2026-07-28 extension scenarios (tasks, SEP-2243 headers), each run alone: their totals at /mcp beside the backend alone. */
const EXTENSION_SCENARIOS = [
  ["tasks", "tasks-lifecycle"],
  ["tasks", "tasks-capability-negotiation"],
  ["tasks", "tasks-wire-fields"],
  ["tasks", "tasks-request-state-removal"],
  ["tasks", "tasks-mrtr-input"],
  ["tasks", "tasks-request-headers"],
  ["tasks", "tasks-dispatch-and-envelope"],
  ["tasks", "tasks-required-task-error"],
  ["tasks", "tasks-mrtr-composition"],
  ["tasks", "http-header-validation"],
  ["strict", "http-custom-header-server-validation"]
]
const BIN = join(root, "dist", "bin.js")
/** Starts a process and resolves with it once `pattern` appears on its stderr (group 1 is returned). */
const startUntil = (args, pattern, options = {}) =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"], ...options })
    let err = ""
    const timer = setTimeout(() => reject(new Error(`no '${pattern}' from ${args.join(" ")}:\n${err}`)), 30_000)
    child.stderr.on("data", (chunk) => {
      err += chunk
      const match = pattern.exec(err)
      if (match) {
        clearTimeout(timer)
        resolve({ child, value: match[1] })
      }
    })
    child.on("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code}:\n${err}`)))
  })

/** Runs the suite against `url`; returns {scenario: {passed, failed}}. */
const runSuite = (node, url, outputDir, suite = SUITE, extra = []) => {
  let output
  try {
    output = execFileSync(node, [suite, "server", "--url", url, "-o", outputDir, ...extra], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 600_000
    })
  } catch (error) {
    // A failed scenario makes the suite exit non-zero; its summary is still on stdout.
    output = `${error.stdout ?? ""}`
  }
  const results = {}
  const summary = new RegExp("^[\u2713\u2717] (\\S+): (\\d+) passed, (\\d+) failed", "gm")
  for (const match of output.matchAll(summary)) {
    results[match[1]] = { passed: Number(match[2]), failed: Number(match[3]) }
  }
  if (Object.keys(results).length === 0) throw new Error(`the suite printed no summary:\n${output.slice(-3000)}`)
  return results
}

/** Runs one scenario against `url`; returns {passed, failed}. */
const runScenario = (node, url, scenario) => {
  let output
  try {
    output = execFileSync(node, [SUITE_NEXT, "server", "--url", url, "--scenario", scenario], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 300_000
    })
  } catch (error) {
    output = `${error.stdout ?? ""}`
  }
  const match = /^Passed: (\d+)\/(\d+), (\d+) failed/m.exec(output)
  if (match === null) throw new Error(`${scenario} printed no summary:\n${output.slice(-3000)}`)
  return { passed: Number(match[1]), failed: Number(match[3]) }
}

const keep = process.argv.includes("--keep")
const work = mkdtempSync(join(tmpdir(), "agentify-conformance-"))
const children = []
try {
  if (!existsSync(BIN)) throw new Error("dist/bin.js is missing: run npm run build first")
  const node = process.execPath

  const direct = await startUntil([FIXTURE, "--http", "0"], /conformance fixture at (http:\/\/\S+)/)
  children.push(direct.child)
  const config = join(work, "gateway.json")
  // roots: so the fixture's roots questions may be asked (a backend is told of roots only with real ones).
  writeFileSync(
    config,
    JSON.stringify({
      backends: [
        { id: "conf", type: "stdio", command: process.execPath, args: [FIXTURE], roots: [work] },
        { id: "modern", type: "stdio", command: process.execPath, args: [MODERN_FIXTURE] }
      ]
    })
  )
  const gateway = await startUntil(
    [BIN, "--http", "127.0.0.1:0", "--config", config],
    /Streamable HTTP at (http:\/\/\S+?)\/mcp/,
    {
      cwd: work,
      env: { ...process.env, OPENAI_API_KEY: "" }
    }
  )
  children.push(gateway.child)

  process.stderr.write("running the suite directly against the fixture...\n")
  const directResults = runSuite(node, direct.value, join(work, "direct"))
  process.stderr.write("running the suite against the gateway's /servers/conf/mcp...\n")
  const gatewayResults = runSuite(node, `${gateway.value}/servers/conf/mcp`, join(work, "gateway"))

  const scenarios = [...new Set([...Object.keys(directResults), ...Object.keys(gatewayResults)])]
  const cell = (r) => (r === undefined ? "-" : `${r.passed} passed${r.failed > 0 ? `, ${r.failed} failed` : ""}`)
  const width = Math.max(...scenarios.map((s) => s.length), 8)
  const lines = [`${"scenario".padEnd(width)}  ${"direct".padEnd(20)}  via /servers/conf/mcp`]
  for (const s of scenarios) lines.push(`${s.padEnd(width)}  ${cell(directResults[s]).padEnd(20)}  ${cell(gatewayResults[s])}`)
  const total = (results) =>
    Object.values(results).reduce((acc, r) => ({ passed: acc.passed + r.passed, failed: acc.failed + r.failed }), {
      passed: 0,
      failed: 0
    })
  lines.push(`${"total".padEnd(width)}  ${cell(total(directResults)).padEnd(20)}  ${cell(total(gatewayResults))}`)
  process.stdout.write(`${lines.join("\n")}\n`)

  const required = readFileSync(REQUIREMENTS_NEXT, "utf8")
    .split(/^client:/m)[0]
    .split(/^server:/m)[1]
    .match(/^ {2}- ([a-z0-9-]+)/gm)
    .map((line) => line.trim().slice(2))
  for (const [id, what] of [
    ["conf", "a session-era backend: the bridge"],
    ["modern", "a 2026-07-28 backend"]
  ]) {
    process.stderr.write(`running the 2026-07-28 required scenarios against the gateway's /servers/${id}/mcp...\n`)
    const next = runSuite(node, `${gateway.value}/servers/${id}/mcp`, join(work, `next-${id}`), SUITE_NEXT, [
      "--requirements",
      "2026-07-28"
    ])
    const scored = required.map((name) => [name, next[name]])
    const clean = scored.filter(([, r]) => r !== undefined && r.failed === 0).length
    const checks = total(Object.fromEntries(scored.filter(([, r]) => r !== undefined)))
    const out = [`\n2026-07-28 required server scenarios via /servers/${id}/mcp (${what})`]
    for (const [name, r] of scored) if (r === undefined || r.failed > 0) out.push(`  ${name.padEnd(width)}  ${cell(r)}`)
    out.push(`  ${clean} of ${required.length} scenarios without a failure; checks: ${cell(checks)}`)
    process.stdout.write(`${out.join("\n")}\n`)
  }

  // The 2026-07-28 extensions through the aggregate: each scenario at the backend's own endpoint
  // (the backend alone, relayed as it is) and at /mcp, the backends unprefixed as the suite expects.
  const strictServer = spawn(process.execPath, [STRICT_FIXTURE], { stdio: ["ignore", "pipe", "inherit"] })
  children.push(strictServer)
  const strictPort = await new Promise((resolve) =>
    strictServer.stdout.once("data", (line) => resolve(JSON.parse(String(line)).port))
  )
  const extensionsConfig = join(work, "extensions.json")
  writeFileSync(
    extensionsConfig,
    JSON.stringify({
      mcpServers: {
        tasks: { type: "stdio", command: process.execPath, args: [TASKS_FIXTURE], namespace: false },
        strict: { type: "http", url: `http://127.0.0.1:${strictPort}/mcp`, namespace: false }
      }
    })
  )
  const extensions = await startUntil(
    [BIN, "--http", "127.0.0.1:0", "--config", extensionsConfig],
    /Streamable HTTP at (http:\/\/\S+?)\/mcp/,
    { cwd: work, env: { ...process.env, OPENAI_API_KEY: "" } }
  )
  children.push(extensions.child)
  process.stderr.write("running the 2026-07-28 extension scenarios at each backend's endpoint and at /mcp...\n")
  const alone = {}
  const aggregate = {}
  for (const [backend, scenario] of EXTENSION_SCENARIOS) {
    alone[scenario] = runScenario(node, `${extensions.value}/servers/${backend}/mcp`, scenario)
    aggregate[scenario] = runScenario(node, `${extensions.value}/mcp`, scenario)
  }
  const extensionLines = [
    `\n2026-07-28 extension scenarios (tasks, SEP-2243 headers)`,
    `${"scenario".padEnd(width)}  ${"backend alone".padEnd(20)}  via /mcp`
  ]
  for (const [, scenario] of EXTENSION_SCENARIOS) {
    extensionLines.push(`${scenario.padEnd(width)}  ${cell(alone[scenario]).padEnd(20)}  ${cell(aggregate[scenario])}`)
  }
  extensionLines.push(`${"total".padEnd(width)}  ${cell(total(alone)).padEnd(20)}  ${cell(total(aggregate))}`)
  process.stdout.write(`${extensionLines.join("\n")}\n`)

  // The gateway as an OAuth client: the suite's client authorization scenarios, each with the
  // scenario's server as a remote backend (scripts/conformance-client.mjs signs in and calls).
  process.stderr.write("running the client authorization scenarios with the gateway as the client...\n")
  let authOutput
  try {
    authOutput = execFileSync(
      node,
      [
        SUITE_NEXT,
        "client",
        "--command",
        `${process.execPath} ${join(root, "scripts", "conformance-client.mjs")}`,
        "--suite",
        "auth",
        "-o",
        join(work, "auth")
      ],
      { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 900_000 }
    )
  } catch (error) {
    authOutput = `${error.stdout ?? ""}`
  }
  const auth = {}
  for (const match of authOutput.matchAll(/^[\u2713\u2717] (\S+): (\d+) passed, (\d+) failed(?:, (\d+) warnings)?/gm)) {
    auth[match[1]] = { passed: Number(match[2]), failed: Number(match[3]), warnings: Number(match[4] ?? 0) }
  }
  const authNames = Object.keys(auth)
  if (authNames.length === 0) throw new Error(`the client suite printed no summary:\n${authOutput.slice(-3000)}`)
  const clean = authNames.filter((name) => auth[name].failed === 0 && auth[name].warnings === 0)
  const sum = (key) => authNames.reduce((n, name) => n + auth[name][key], 0)
  const out = ["\nclient authorization scenarios (conformance 0.2.0-alpha, client mode), the gateway as the client"]
  for (const name of authNames.filter((n) => !clean.includes(n))) {
    out.push(`  ${name.padEnd(width)}  ${auth[name].passed} passed, ${auth[name].failed} failed, ${auth[name].warnings} warnings`)
  }
  out.push(
    `  ${clean.length} of ${authNames.length} scenarios without a failure or warning; checks: ${sum("passed")} passed, ${sum("failed")} failed, ${sum("warnings")} warnings`
  )
  process.stdout.write(`${out.join("\n")}\n`)
} finally {
  for (const child of children) child.kill("SIGTERM")
  if (!keep) rmSync(work, { recursive: true, force: true })
  else process.stderr.write(`results kept in ${work}\n`)
}
