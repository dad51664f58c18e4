/**
 * The one reader of files the gateway did not just make (see src/config/RegularFile.ts): a FIFO, a
 * link to /dev/zero, a directory or an over-size file is refused, never read, and a state file so
 * refused is said once, naming the file and not its content.
 *
 * The cases that would hold a reader that blocks (a FIFO with no writer) or read without end
 * (/dev/zero) run in a process of their own, bounded by a deadline generous for a busy machine: a
 * reader that blocks fails the test instead of holding the runner.
 */
import { describe, expect, it } from "vitest"
import { execFileSync, spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import * as RegularFile from "../../../src/config/RegularFile.js"
import { ROOT } from "../../support/stdioClient.js"

const tmp = () => mkdtempSync(join(tmpdir(), "agentify-regular-"))

/** Each of `files` read in a child (as state, links refused; and as a user's file, links followed): the outcomes, or why none came. */
const readInChild = (files: ReadonlyArray<string>, maxBytes: number) => {
  const module = pathToFileURL(join(ROOT, "src", "config", "RegularFile.ts")).href
  const script = `
    const RegularFile = await import(${JSON.stringify(module)})
    const files = ${JSON.stringify(files)}
    const shown = (o) => (o._tag === "Read" ? { _tag: "Read", text: o.bytes.toString("utf8") } : o)
    process.stdout.write(JSON.stringify(files.map((file) => ({
      state: shown(RegularFile.read(file, ${maxBytes})),
      user: shown(RegularFile.read(file, ${maxBytes}, { links: "follow" }))
    }))))
  `
  const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: ROOT,
    encoding: "utf8",
    // A reader that blocks on the FIFO, or reads /dev/zero, never ends: the deadline ends it.
    timeout: 120_000,
    killSignal: "SIGKILL"
  })
  if (run.status !== 0) throw new Error(`the reader did not finish (${run.signal ?? run.status}): ${run.stderr.slice(0, 2_000)}`)
  return JSON.parse(run.stdout) as Array<{ state: Record<string, unknown>; user: Record<string, unknown> }>
}

describe("RegularFile", () => {
  it("refuses a FIFO, a link to /dev/zero, a device, a directory and an over-size file, without blocking", () => {
    const dir = tmp()
    const fifo = join(dir, "fifo.json")
    execFileSync("mkfifo", [fifo])
    const zero = join(dir, "zero.json")
    symlinkSync("/dev/zero", zero)
    const folder = join(dir, "folder.json")
    mkdirSync(folder)
    const big = join(dir, "big.json")
    writeFileSync(big, "x".repeat(65))
    const fine = join(dir, "fine.json")
    writeFileSync(fine, '{"ok":true}')
    const linked = join(dir, "linked.json")
    symlinkSync(fine, linked)

    const [onFifo, onZero, onDevice, onFolder, onBig, onFine, onLink, onMissing] = readInChild(
      [fifo, zero, "/dev/zero", folder, big, fine, linked, join(dir, "missing.json")],
      64
    )
    expect(onFifo!.state).toEqual({ _tag: "Refused", reason: "it is a FIFO, not a regular file" })
    expect(onFifo!.user).toEqual(onFifo!.state)
    // A state file that is a link is refused as such; a user's file is followed, and /dev/zero refused for what it is.
    expect(onZero!.state).toEqual({ _tag: "Refused", reason: "it is a symbolic link" })
    expect(onZero!.user).toEqual({ _tag: "Refused", reason: "it is a device, not a regular file" })
    expect(onDevice!.state).toEqual({ _tag: "Refused", reason: "it is a device, not a regular file" })
    expect(onFolder!.state).toEqual({ _tag: "Refused", reason: "it is a directory" })
    expect(onBig!.state).toEqual({ _tag: "Refused", reason: "it is 65 bytes, more than the 64 allowed" })
    expect(onFine!.state).toEqual({ _tag: "Read", text: '{"ok":true}' })
    expect(onLink!.state).toEqual({ _tag: "Refused", reason: "it is a symbolic link" })
    expect(onLink!.user).toEqual({ _tag: "Read", text: '{"ok":true}' })
    expect(onMissing!.state).toEqual({ _tag: "Missing" })
  })

  it("reads at most the bound: a file of exactly the bound is read whole", () => {
    const dir = tmp()
    const file = join(dir, "exact.json")
    writeFileSync(file, "y".repeat(64))
    const read = RegularFile.read(file, 64)
    expect(read._tag === "Read" && read.bytes.length).toBe(64)
    expect(RegularFile.read(file, 63)._tag).toBe("Refused")
  })

  it("says a refused state file once, naming the file and not its content, to whoever hears (those said before too)", () => {
    const dir = tmp()
    const big = join(dir, "secret-holder.json")
    writeFileSync(big, "sk-secret-content".repeat(10))
    const folder = join(dir, "folder.json")
    mkdirSync(folder)
    // Said before anyone hears: it waits.
    expect(RegularFile.readStateText(big, 16)).toBeUndefined()
    const heard: Array<string> = []
    const stop = RegularFile.hear((message) => heard.push(message))
    try {
      expect(RegularFile.readStateText(big, 16)).toBeUndefined()
      expect(RegularFile.readStateText(folder, 16)).toBeUndefined()
      expect(RegularFile.readStateText(folder, 16)).toBeUndefined()
      expect(RegularFile.readStateText(join(dir, "missing.json"), 16)).toBeUndefined()
      expect(heard).toEqual([
        `state file ${big} is ignored: it is ${"sk-secret-content".length * 10} bytes, more than the 16 allowed`,
        `state file ${folder} is ignored: it is a directory`
      ])
      expect(heard.join("\n")).not.toContain("sk-secret-content")
    } finally {
      stop()
    }
  })
})
