#!/usr/bin/env node
/**
 * A scripted model for this example, to run it without a key or a network: a local server speaking
 * the Chat Completions API that plays what a model does for "what is still open in
 * notes/release.md? remember it", step by step, from what the gateway sends it.
 *
 *   node model.mjs &        # listens on 127.0.0.1:11436 (or --port N)
 *   OPENAI_BASE_URL=http://127.0.0.1:11436/v1 OPENAI_API_KEY=fake \
 *     node ../../dist/bin.js ask "what is still open in notes/release.md? remember it" --config agentify.json
 *
 * First turn: the plan (`agentify_plan`, naming the two tools it will use) with the read of the
 * file the request names; then, from what it read, one entity in memory holding the open items
 * (`- [ ]` lines); then its answer. No dependencies.
 */
import * as http from "node:http"

const at = process.argv.indexOf("--port")
const port = at > 0 ? Number(process.argv[at + 1]) : 11436

const READ = "files__read_text_file"
const REMEMBER = "memory__create_entities"

const completion = (model, message) => ({
  id: `scripted-${Date.now()}`,
  object: "chat.completion",
  created: Math.floor(Date.now() / 1000),
  model,
  choices: [
    {
      index: 0,
      message: { role: "assistant", content: null, ...message },
      finish_reason: message.tool_calls ? "tool_calls" : "stop"
    }
  ],
  usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
})

const calls = (...list) => ({
  tool_calls: list.map(([name, args], i) => ({
    id: `call_${Date.now()}_${i}`,
    type: "function",
    function: { name, arguments: JSON.stringify(args) }
  }))
})

/** The functions already called in this conversation, by name. */
const called = (messages) => new Set(messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.function?.name)))

/** The path the request names (a word with a slash or a dot inside it). */
const pathIn = (request) =>
  request
    .split(/\s+/)
    .map((word) => word.replace(/[?!,;:"')]+$/, ""))
    .find((word) => /\w[./]\w/.test(word)) ?? "."

const answer = (body) => {
  const messages = body.messages ?? []
  const request =
    /^Request: (.*)$/m.exec(
      messages
        .filter((m) => m.role === "user")
        .map((m) => String(m.content))
        .join("\n")
    )?.[1] ?? ""
  const offered = new Set((body.tools ?? []).map((t) => t.function.name))
  const done = called(messages)
  const read = () => [READ, { path: pathIn(request) }]
  if (!done.has(READ)) {
    const plan = ["agentify_plan", { tools: [READ, REMEMBER], why: "read the checklist, then keep its open items in memory" }]
    return calls(...(offered.has("agentify_plan") && !done.has("agentify_plan") ? [plan] : []), read())
  }
  const results = messages.filter((m) => m.role === "tool").map((m) => String(m.content))
  const checklist = results.find((text) => text.includes("- [ ]")) ?? ""
  const open = [...checklist.matchAll(/- \[ \] ([^\n]+)/g)].map((m) => m[1].trim())
  const title = /^# (?:Release )?(.+)$/m.exec(checklist)?.[1]?.trim() ?? "release"
  const name = `release ${title}`
  if (!done.has(REMEMBER) && offered.has(REMEMBER))
    return calls([REMEMBER, { entities: [{ name, entityType: "task", observations: open }] }])
  const items =
    open.length === 0
      ? "Nothing is still open."
      : `${open.length === 2 ? "Two items are" : `${open.length} items are`} still open: ${open.join(" and ")}.`
  return { content: `${items} I saved them in memory as the entity "${name}".` }
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
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(completion(body.model, answer(body))))
    } catch (error) {
      res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: String(error) } }))
    }
  })
})
server.listen(port, "127.0.0.1", () => process.stderr.write(`scripted model at http://127.0.0.1:${server.address().port}/v1\n`))
