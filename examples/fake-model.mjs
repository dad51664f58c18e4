#!/usr/bin/env node
/**
 * A stand-in for a model, to watch an orchestration without a key or a network: a local server
 * speaking the Chat Completions API (POST /v1/chat/completions) that plays a very literal model.
 *
 *   node examples/fake-model.mjs            # listens on 127.0.0.1:11435 (or --port N)
 *   OPENAI_BASE_URL=http://127.0.0.1:11435/v1 OPENAI_API_KEY=fake \
 *     node dist/bin.js ask "read README.md"
 *
 * Its whole mind: on its first turn it calls the offered tool whose name and description share
 * the most words with the request (forced to call one, as the gateway may ask, it calls that one),
 * filling each required string argument with a word of the request that looks like a path (or
 * "."); once it has read a result it answers with the result's first lines. Offered only
 * `run_code` (code mode), it writes a one-line script calling that tool. No dependencies.
 */
import * as http from "node:http"

const at = process.argv.indexOf("--port")
const port = at > 0 ? Number(process.argv[at + 1]) : 11435
const words = (text) =>
  new Set(
    String(text ?? "")
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter((w) => w.length > 2)
  )

/** How many of the request's words a name shares (its own words first), then its description. */
const score = (request, name, description = "") => {
  const asked = words(request)
  const shared = (text) => [...words(text)].filter((w) => asked.has(w)).length
  return shared(name.replace(/_/g, " ")) * 10 + shared(description)
}

/** The offered function that shares the most words with the request; the first offered on a tie. */
const best = (tools, request) => {
  let chosen
  let most = -1
  for (const { function: fn } of tools) {
    const points = score(request, fn.name, fn.description)
    if (points > most) [chosen, most] = [fn, points]
  }
  return chosen
}

/** A path-like word of the request, or ".". */
const pathIn = (request) =>
  String(request)
    .split(/\s+/)
    .map((w) => w.replace(/[?!,;:"')]+$/, ""))
    .find((w) => /[./]/.test(w) && !w.endsWith(".")) ?? "."

/** Arguments for `fn`: every required string gets the request's path-like word, or ".". */
const argumentsFor = (fn, request) => {
  const path = pathIn(request)
  const args = {}
  for (const name of fn.parameters?.required ?? []) {
    const type = fn.parameters?.properties?.[name]?.type
    args[name] = type === "array" ? [path] : type === "number" || type === "integer" ? 1 : path
  }
  return args
}

const reply = (message) => ({
  id: `fake-${Date.now()}`,
  object: "chat.completion",
  created: Math.floor(Date.now() / 1000),
  model: "fake-model",
  choices: [
    {
      index: 0,
      message: { role: "assistant", content: null, ...message },
      finish_reason: message.tool_calls ? "tool_calls" : "stop"
    }
  ],
  usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
})

const call = (name, args) => ({
  tool_calls: [{ id: `call_${Date.now()}`, type: "function", function: { name, arguments: JSON.stringify(args) } }]
})

const answer = (body) => {
  const messages = body.messages ?? []
  // The request alone (the gateway's user message starts "Request: ...", then the context).
  const said = messages
    .filter((m) => m.role === "user")
    .map((m) => String(m.content))
    .join("\n")
  // Without that line (another client's messages), all the user said.
  const request = /^Request: (.*)$/m.exec(said)?.[1] ?? said.replace(/\n/g, " ")
  const results = messages.filter((m) => m.role === "tool")
  const tools = body.tools ?? []
  if (results.length > 0 || tools.length === 0) {
    const last = String(results.at(-1)?.content ?? "nothing to read")
    return reply({ content: `Here is what I found:\n${last.split("\n").slice(0, 8).join("\n")}` })
  }
  const forced = body.tool_choice?.function?.name
  const offered = forced === undefined ? tools : tools.filter((t) => t.function.name === forced)
  const chosen = best(offered, request)
  if (chosen.name === "run_code") {
    // Code mode: the tools are declared in run_code's description, as `tools.<namespace>.<tool>(args)`;
    // the script calls the best-named one with the request's path.
    let namespace
    let found
    let most = -1
    for (const line of chosen.description.split("\n")) {
      const space = /^ {2}(\w+): \{$/.exec(line)
      if (space) namespace = space[1]
      const fn = /^ {4}(\w+)\(args: /.exec(line)
      if (fn && namespace && score(request, fn[1]) > most) [found, most] = [`tools.${namespace}.${fn[1]}`, score(request, fn[1])]
    }
    const code = found ? `return await ${found}(${JSON.stringify({ path: pathIn(request) })})` : `return "no tool fits"`
    return reply(call("run_code", { code }))
  }
  if (chosen.name === "agentify_plan")
    return reply(
      call("agentify_plan", {
        tools: [
          best(
            tools.filter((t) => t.function.name !== "agentify_plan"),
            request
          )?.name
        ],
        why: request
      })
    )
  return reply(call(chosen.name, argumentsFor(chosen, request)))
}

const server = http.createServer((req, res) => {
  let text = ""
  req.on("data", (chunk) => (text += chunk))
  req.on("end", () => {
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "not found" } }))
      return
    }
    try {
      const body = JSON.parse(text)
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer(body)))
    } catch (error) {
      res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: String(error) } }))
    }
  })
})
server.listen(port, "127.0.0.1", () => process.stderr.write(`fake model at http://127.0.0.1:${server.address().port}/v1\n`))
