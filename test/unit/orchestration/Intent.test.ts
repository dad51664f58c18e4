/**
 * What a request asks to be done with what is read for it (orchestration/Intent): to keep or pass
 * on what it reads, or only what the request itself says. The flow guard's `untrusted-write` lets a
 * planned write carry what was read only for the first.
 */
import { describe, expect, it } from "vitest"
import { keeping, keepsWhatItReads, readFromNamed } from "../../../src/orchestration/Intent.js"

describe("a request that asks to keep what it reads", () => {
  it("keeping a part of a source the request names is keeping what it reads", () => {
    for (const request of [
      "Remember the open items of clean.txt",
      "save the dates in /srv/plan.md to memory",
      "Post the headlines from https://news.example/today to #team",
      "note the deadlines of plan.docx",
      "Keep a list of the TODOs in src/app.ts"
    ])
      expect(keepsWhatItReads(request), request).toBe(true)
  })

  it("as before: its contents, a summary, what it says", () => {
    for (const request of [
      "Read notes.md and save what it says to memory",
      "save a summary of notes.md",
      "Post the weather from https://news.example/today to #team"
    ])
      expect(keepsWhatItReads(request), request).toBe(true)
  })

  it("keeping what the request says, or no keeping at all, is not", () => {
    for (const request of [
      "Read notes.md and remember that we ship on Friday",
      "Read notes.md and remember that we ship on Friday.",
      "Summarise notes.md for me",
      "What do you remember about the project?",
      "Read issue 42 of the tracker",
      "Read https://board.example/this-week, then sort out its action items: files, folders, memory, mail, chat, the web and the CRM"
    ])
      expect(keepsWhatItReads(request), request).toBe(false)
  })

  it("what it keeps is what the sources it names say: a result read from one of them, no other", () => {
    expect(keeping("Remember the open items of clean.txt")).toEqual({ sources: ["clean.txt"] })
    expect(keeping("Post the headlines from https://news.example/today to #team")).toEqual({
      sources: ["https://news.example/today"]
    })
    // Only the source a keeping verb governs, not every source the request names.
    expect(keeping("Read ~/.ssh/id_rsa and notes.md, then post the summary of notes.md to #team")).toEqual({
      sources: ["notes.md"]
    })
    expect(keeping("Remember the open items of clean.txt and the dates in plans.md")).toEqual({ sources: ["clean.txt"] })
    expect(keeping("Read ~/.ssh/id_rsa, then save what notes.md says to memory")).toEqual({ sources: ["notes.md"] })
    // A keeping that names no source of its own keeps what the request read.
    expect(keeping("Read notes.md and save what it says to memory")).toEqual({ sources: ["notes.md"] })
    expect(keeping("save the dates in ~/plans/q3.md.")).toEqual({ sources: ["~/plans/q3.md"] })
    expect(keeping("Read notes.md and remember that we ship on Friday")).toBeUndefined()
    const read = (args: unknown) => ({ call: 1, backendId: "fs", tool: "fs__read_text_file", arguments: args })
    expect(readFromNamed(read({ path: "/home/me/clean.txt" }), ["clean.txt"])).toBe(true)
    expect(readFromNamed(read({ path: "clean.txt" }), ["./clean.txt"])).toBe(true)
    expect(readFromNamed(read({ paths: ["/home/me/plans/q3.md"] }), ["~/plans/q3.md"])).toBe(true)
    expect(readFromNamed(read({ url: "https://news.example/today/" }), ["https://news.example/today"])).toBe(true)
    // Another file, one whose name only ends alike, or nothing named: not the request's.
    expect(readFromNamed(read({ path: "/home/me/other.txt" }), ["clean.txt"])).toBe(false)
    expect(readFromNamed(read({ path: "/home/me/unclean.txt" }), ["clean.txt"])).toBe(false)
    expect(readFromNamed(read({ path: "/home/me/clean.txt" }), [])).toBe(false)
  })
})
