/**
 * The Cedar engine behind `policies` (the real @cedar-policy/cedar-wasm): each policy by its @id,
 * deny by default, forbid over permit, answers that do not depend on the context kept (and what a
 * listing leaves out), arguments given to Cedar as it can hold them and never as entities; the
 * schema generated from tools, and a file validated against it.
 */
import { describe, expect, it } from "vitest"
import * as Cedar from "../../../src/policy/Cedar.js"
import * as CedarSchema from "../../../src/policy/CedarSchema.js"
import type { PolicySet, Principal, Resource } from "../../../src/policy/Policy.js"

const loaded = (text: string): PolicySet => {
  const set = Cedar.load("test.cedar", text)
  if ("problems" in set) throw new Error(set.problems.join("; "))
  return set
}
const user = (id: string, groups: ReadonlyArray<string> = []): Principal => ({
  id,
  scopes: ["mcp:tools"],
  groups,
  profile: "",
  client: "test"
})
const tool = (id: string, readOnly: boolean): Resource => ({
  type: "Tool",
  id,
  backend: id.split("__")[0]!,
  tool: { readOnly, destructive: !readOnly, openWorld: false, idempotent: false }
})
const ask = (set: PolicySet, principal: Principal, resource: Resource, args: unknown = {}, via = "client") =>
  set.decide({ principal, action: "call", resource, arguments: args, via })

describe("Cedar policies", () => {
  const set = loaded(`
    @id("reads") permit (principal, action == Action::"call", resource) when { resource.readOnly };
    @id("ops") permit (principal in Group::"ops", action, resource);
    @id("no-etc") forbid (principal, action == Action::"call", resource in Backend::"fs")
      when { context.arguments has path && context.arguments.path like "/etc/*" };
    @id("owner") permit (principal, action == Action::"call", resource == Tool::"fs__chown")
      when { context.arguments has owner && context.arguments.owner == principal };
    permit (principal == User::"carol", action == Action::"call", resource == Tool::"fs__write") when { context.via == "client" };
  `)

  it("names each policy by its @id, else by its place", () => {
    expect(set.ids).toEqual(["reads", "ops", "no-etc", "owner", "policy4"])
  })

  it("denies what no policy permits, and lets a forbid win over a permit, naming it", () => {
    expect(ask(set, user("bob"), tool("fs__write", false))).toEqual({
      allowed: false,
      policies: [],
      why: 'no policy permits call on Tool::"fs__write"'
    })
    expect(ask(set, user("alice", ["ops"]), tool("fs__write", false), { path: "/home/a" })).toEqual({ allowed: true })
    expect(ask(set, user("alice", ["ops"]), tool("fs__write", false), { path: "/etc/passwd" })).toEqual({
      allowed: false,
      policies: ["no-etc"],
      why: 'forbidden by policy "no-etc"'
    })
    // How the call was made is in the context: carol may write as a client, not through a script.
    expect(ask(set, user("carol"), tool("fs__write", false), {}, "client").allowed).toBe(true)
    expect(ask(set, user("carol"), tool("fs__write", false), {}, "script").allowed).toBe(false)
  })

  it("says what a listing leaves out: only what is denied in every context", () => {
    expect(set.mayEver(user("bob"), "call", tool("fs__read", true))).toBe(true)
    expect(set.mayEver(user("bob"), "call", tool("fs__write", false))).toBe(false)
    // Allowed for some arguments (an owner that is bob himself): listed.
    expect(set.mayEver(user("bob"), "call", tool("fs__chown", false))).toBe(true)
    // Allowed for some ways of calling: listed.
    expect(set.mayEver(user("carol"), "call", tool("fs__write", false))).toBe(true)
  })

  it("never lets an argument pose as an entity, and leaves out what Cedar cannot hold", () => {
    const posing = { owner: { __entity: { type: "User", id: "bob" } } }
    expect(ask(set, user("bob"), tool("fs__chown", false), posing).allowed).toBe(false)
    expect(
      Cedar.toCedar({ a: 1, b: 1.5, c: null, d: [1, "x", 2.5], e: { __extn: { fn: "ip", arg: "1.2.3.4" }, f: true } })
    ).toEqual({
      a: 1,
      d: [1, "x"],
      e: { f: true }
    })
  })

  it("says every problem of a file that cannot be loaded", () => {
    expect(
      Cedar.load("x.cedar", 'permit (principal, action, resource) when { x };\n@id("a") permit (principal, action, resource);')
    ).toMatchObject({
      problems: [expect.stringContaining("invalid variable: x")]
    })
    expect(
      Cedar.load("x.cedar", '@id("a") permit (principal, action, resource);\n@id("a") forbid (principal, action, resource);')
    ).toEqual({ problems: ['two policies have the @id "a"'] })
  })
})

describe("the Cedar schema of the catalog", () => {
  const tools = [
    {
      name: "fs__write",
      inputSchema: {
        type: "object",
        properties: {
          path: { type: "string" },
          mode: { type: "integer" },
          tags: { type: "array", items: { type: "string" } },
          options: { type: "object", properties: { force: { type: "boolean" } } },
          blob: {}
        }
      }
    },
    { name: "db__query", inputSchema: { type: "object", properties: { mode: { type: "string" } } } }
  ]

  it("types each argument as Cedar holds it, optional; leaves out a name the tools type differently, saying so", () => {
    const schema = CedarSchema.generate(tools)
    expect(schema).toContain('  "path"?: String,')
    expect(schema).toContain('  "tags"?: Set<String>,')
    expect(schema).toContain('  "options"?: {"force"?: Bool},')
    expect(schema).not.toContain('"blob"')
    expect(schema).not.toMatch(/^ {2}"mode"/m)
    expect(schema).toContain('// "mode" is left out of Arguments: its types differ (fs__write: Long; db__query: String)')
  })

  it("validates policies against it: an argument read without `has` is an error (every argument is optional)", () => {
    const schema = CedarSchema.generate(tools)
    expect(
      Cedar.validate(
        'permit (principal, action == Action::"call", resource) when { context.arguments.path like "/x/*" };',
        schema
      )
    ).toEqual([expect.stringContaining("attribute `arguments.path`")])
    expect(
      Cedar.validate(
        'permit (principal in Group::"ops", action == Action::"call", resource) when { context.arguments has path && context.arguments.path like "/x/*" && resource.readOnly && context.flow.argumentsFrom.contains("mail") };',
        schema
      )
    ).toEqual([])
  })
})
