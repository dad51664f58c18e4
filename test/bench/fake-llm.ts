/**
 * The local Chat Completions server of the tests in a process of its own, for figures that a
 * server in the measuring process would skew (building a 10,000-call completion stalls its event
 * loop, and with it the client measuring pings). Every request is answered with one turn of
 * `FAKE_CALLS` calls of `FAKE_TOOL` with the arguments `FAKE_ARGUMENTS` (JSON); prints
 * `{"baseUrl": ...}` once listening, and runs until killed.
 */
import { startFakeOpenAI } from "../support/fakeOpenAI.js"

const fake = await startFakeOpenAI()
const call = { name: process.env.FAKE_TOOL ?? "", arguments: JSON.parse(process.env.FAKE_ARGUMENTS ?? "{}") as unknown }
fake.setSteps([{ toolCalls: Array.from({ length: Number(process.env.FAKE_CALLS ?? "1") }, () => call) }])
process.stdout.write(`${JSON.stringify({ baseUrl: fake.baseUrl })}\n`)
