/**
 * Decoding a configuration document with readable issues: each problem with its path, unknown keys
 * refused with "did you mean", the keys other clients keep in their files ignored, and the other
 * clients' shapes (`mcpServers`, VS Code's `servers`, seed shapes) turned into GatewayOptions.
 */
import { Formatter, Result, Schema, SchemaAST, SchemaIssue } from "effect"
import { InvalidParams } from "../protocol/Errors.js"
import { closest } from "./Suggest.js"
import { setOwn } from "./Jsonc.js"

import {
  BackendConfig,
  BackendFields,
  Backends,
  EXPOSURE_KEYS,
  GatewayOptions,
  McpServerEntry,
  McpServers,
  ServerDefaults,
  optionFields
} from "./Schema.js"
import { isObject } from "../json/Json.js"

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`),
    ""
  )

/** One problem of a decode: where, and what (a schema's own message wins). */
export interface DecodeIssue {
  /** The kind of SchemaIssue the problem is ("MissingKey": the key is absent). */
  readonly _tag: SchemaIssue.Issue["_tag"]
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/** Deeper than this, a value is not printed: Effect's formatter recurses, and a client can send one some thousands of levels deep. */
const MAX_SHOWN_DEPTH = 200

const tooDeepToShow = (value: unknown): boolean => {
  const stack: Array<[unknown, number]> = [[value, 0]]
  const seen = new Set<unknown>()
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!
    if (typeof v !== "object" || v === null || seen.has(v)) continue
    if (depth >= MAX_SHOWN_DEPTH) return true
    seen.add(v)
    for (const child of Object.values(v)) stack.push([child, depth + 1])
  }
  return false
}

/**
 * `, actual <the rejected value as Effect prints it>` (`"six"`, `3`, `{"a":1}`), never overflowing
 * the stack; nothing when the decode ran without `reportInput: true` (the value was not kept).
 */
const actual = (issue: SchemaIssue.Issue): string => (SchemaIssue.hasInput(issue) ? `, actual ${shown(issue.input)}` : "")

const shown = (input: unknown): string => {
  if (tooDeepToShow(input)) return "a value nested too deeply to show"
  try {
    return Formatter.format(input)
  } catch {
    return "a value nested too deeply to show"
  }
}

const ownMessage = (ast: SchemaAST.AST): string | undefined => {
  const message = ast.annotations?.message
  return typeof message === "string" ? message : undefined
}

/** `Expected number, actual "six"`: what the schema names the type, and the value given. */
const expected = (ast: SchemaAST.AST, issue: SchemaIssue.Issue): string => {
  const own = ownMessage(ast)
  if (own !== undefined) return own
  // Effect's own name for the type ("number", "\"writes\"", "object"); the message is Effect's "Expected <name>".
  const name = SchemaIssue.defaultLeafHook(new SchemaIssue.InvalidType(ast)).replace(/^Expected /, "")
  return `Expected ${name}${actual(issue)}`
}

/**
 * A value no branch of a union could take: a line per branch, as each branch would say it (the
 * lines of literal branches are joined in one below: see joinLiterals). A union with a message of
 * its own (`namespace`, `auth`, `type`) says only that.
 */
const unionMisses = (ast: SchemaAST.AST, issue: SchemaIssue.Issue): Array<string> => {
  const own = ownMessage(ast)
  if (own !== undefined) return [own]
  if (!SchemaAST.isUnion(ast)) return [expected(ast, issue)]
  return ast.types.flatMap((member) => unionMisses(member, issue))
}

/**
 * Each problem of a decode with its path. A message given in the schema wins over what it holds
 * (a filter's, or a union's over each of its branches); otherwise Effect's wording, with the
 * rejected value when the decode was run with `reportInput: true`.
 */
const collect = (
  issue: SchemaIssue.Issue,
  path: ReadonlyArray<PropertyKey>,
  override: string | undefined
): Array<DecodeIssue> => {
  const one = (message: string): Array<DecodeIssue> => [{ _tag: issue._tag, path, message: override ?? message }]
  switch (issue._tag) {
    case "Filter": {
      const message =
        override ??
        SchemaIssue.defaultCheckHook(issue) ??
        (issue.issue._tag === "InvalidValue"
          ? `Expected ${typeof issue.filter.annotations?.expected === "string" ? issue.filter.annotations.expected : "a valid value"}${actual(issue)}`
          : undefined)
      return collect(issue.issue, path, message)
    }
    case "Encoding":
      return collect(issue.issue, path, override)
    case "Pointer":
      return collect(issue.issue, [...path, ...issue.path], override)
    case "Composite":
      return issue.issues.flatMap((i) => collect(i, path, override))
    case "AnyOf": {
      const own = override ?? ownMessage(issue.ast)
      if (own !== undefined) return one(own)
      if (issue.issues.length > 0) return issue.issues.flatMap((i) => collect(i, path, undefined))
      return unionMisses(issue.ast, issue).map((message) => ({ _tag: issue._tag, path, message }))
    }
    case "InvalidType":
      return one(expected(issue.ast, issue))
    case "MissingKey":
      return one("is missing")
    case "UnexpectedKey":
      return one("is unexpected")
    default:
      return one(SchemaIssue.defaultLeafHook(issue))
  }
}

/** Each problem of a decode, with its own message (a schema's annotation wins), never overflowing the stack. */
export const safeIssues = (error: Schema.SchemaError): Array<DecodeIssue> => collect(error.issue, [], undefined)

/** A union's branch that wanted one literal value: `Expected "writes", actual "sometimes"`. */
const LITERAL_EXPECTED = /^Expected ("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null), actual (.*)$/s

/**
 * A value that is none of a field's allowed literals fails each of them: one line naming them
 * all (`confirmTools: must be one of "destructive", "writes", "never", not "sometimes"`), in
 * place of a line per allowed value.
 */
const joinLiterals = (issues: ReadonlyArray<{ readonly where: string; readonly what: string }>): Array<string> => {
  const literals = new Map<string, { readonly allowed: Array<string>; readonly actual: string }>()
  for (const { where, what } of issues) {
    const match = LITERAL_EXPECTED.exec(what)
    if (match === null) continue
    const seen = literals.get(where)
    if (seen === undefined) literals.set(where, { allowed: [match[1]!], actual: match[2]! })
    else seen.allowed.push(match[1]!)
  }
  const lines: Array<string> = []
  const said = new Set<string>()
  const at = (where: string, what: string) => (where === "" ? what : `${where}: ${what}`)
  for (const { where, what } of issues) {
    const joined = LITERAL_EXPECTED.test(what) ? literals.get(where) : undefined
    if (joined === undefined || joined.allowed.length < 2) lines.push(at(where, what))
    else if (!said.has(where)) {
      // Said once, where the first of them was.
      said.add(where)
      lines.push(at(where, `must be one of ${joined.allowed.join(", ")}, not ${joined.actual}`))
    }
  }
  return lines
}

/** `path: problem` lines, e.g. `backends[0].id: must match ^[a-zA-Z0-9_-]{1,64}$`. */
export const formatIssues = (
  error: Schema.SchemaError,
  mapPath: (path: ReadonlyArray<PropertyKey>) => ReadonlyArray<PropertyKey> = (p) => p
): Array<string> =>
  joinLiterals(
    safeIssues(error)
      // An optional field is a union with undefined; its "Expected undefined" branch is noise.
      .filter((issue) => !issue.message.startsWith("Expected undefined, actual"))
      .map((issue) => ({
        where: formatPath(mapPath(issue.path)),
        what: issue._tag === "MissingKey" ? "is required" : issue.message
      }))
  )

// `reportInput`: the value rejected is named in a line that has no message of its own (`Expected number, actual "six"`).
const decodeOptionsResult = Schema.decodeUnknownResult(GatewayOptions, { errors: "all", reportInput: true })

// Keys: unknown ones are errors, so a misspelt `backend` cannot silently leave the default running

/** Every key GatewayOptions accepts (the docs list each one: test/e2e/docs.test.ts). */
export const OPTION_KEYS = [...Object.keys(optionFields), "backends", "mcpServers", "servers", "defaults"]
/** Every key a BackendConfig accepts. */
export const BACKEND_KEYS = Object.keys(BackendFields.fields)
const MCP_SERVER_KEYS = Object.keys(McpServerEntry.fields)
const DEFAULTS_KEYS = Object.keys(ServerDefaults.fields)
/** Keys that other MCP clients keep in their own config files; they mean nothing to the gateway. */
const FOREIGN_TOP_KEYS = new Set(["$schema", "globalShortcut", "inputs"])
const FOREIGN_SERVER_KEYS = new Set(["autoApprove", "alwaysAllow", "trust"])
/** In `mcpServers`, `timeout` is Cline's, in seconds: ignored there (see `fromMcpServers`). */
const CLINE_FOREIGN_KEYS = new Set([...FOREIGN_SERVER_KEYS, "timeout"])
/** Names that JavaScript objects treat specially: a key like this would be dropped while decoding. */
const RESERVED_KEYS = new Set(["__proto__", "constructor", "prototype"])

/** `unknown key 'backend' (did you mean 'backends'?)` */
const unknownKey = (key: string, known: ReadonlyArray<string>): string => {
  const best = closest(key, known)
  return `unknown key '${key.slice(0, 64)}'${best === undefined ? "" : ` (did you mean '${best}'?)`}`
}

/**
 * The key problems of a GatewayOptions document, as `path: problem` lines, and the foreign keys
 * it ignores. Only the gateway's own structures are checked (a backend's `env` is free-form).
 */
const checkKeys = (input: Record<string, unknown>): { problems: Array<string>; ignored: Array<string> } => {
  const problems: Array<string> = []
  const ignored: Array<string> = []
  const check = (object: Record<string, unknown>, where: string, known: ReadonlyArray<string>, foreign: ReadonlySet<string>) => {
    for (const key of Object.keys(object)) {
      const path = where === "" ? key : `${where}.${key}`
      if (RESERVED_KEYS.has(key)) problems.push(`${where === "" ? "" : `${where}: `}the key '${key}' is not allowed`)
      else if (foreign.has(key)) ignored.push(path)
      else if (!known.includes(key)) problems.push(`${where === "" ? "" : `${where}: `}${unknownKey(key, known)}`)
    }
  }
  check(input, "", OPTION_KEYS, FOREIGN_TOP_KEYS)
  /** A server's own keys, and `__proto__` in its free-form `env` (it would vanish in decoding). */
  const checkServer = (
    server: Record<string, unknown>,
    where: string,
    known: ReadonlyArray<string>,
    foreign: ReadonlySet<string> = FOREIGN_SERVER_KEYS
  ) => {
    check(server, where, known, foreign)
    if (isObject(server.env) && Object.hasOwn(server.env, "__proto__"))
      problems.push(`${where}.env: the key '__proto__' is not allowed`)
  }
  if (Array.isArray(input.backends)) {
    input.backends.forEach((backend, i) => {
      if (isObject(backend)) checkServer(backend, `backends[${i}]`, BACKEND_KEYS)
    })
  }
  for (const field of ["mcpServers", "servers"] as const) {
    const map = input[field]
    if (!isObject(map)) continue
    for (const [name, server] of Object.entries(map)) {
      if (RESERVED_KEYS.has(name)) problems.push(`${field}: the server name '${name}' is not allowed`)
      else if (isObject(server))
        checkServer(
          server,
          `${field}.${name}`,
          MCP_SERVER_KEYS,
          field === "mcpServers" ? CLINE_FOREIGN_KEYS : FOREIGN_SERVER_KEYS
        )
    }
  }
  if (isObject(input.defaults)) checkServer(input.defaults, "defaults", DEFAULTS_KEYS)
  return { problems, ignored }
}

/** The options with `mcpServers` turned into stdio backends. */
export interface NormalizedOptions extends Omit<GatewayOptions, "mcpServers" | "backends"> {
  readonly backends?: ReadonlyArray<BackendConfig>
  /** Keys other MCP clients write that the gateway ignores (logged at debug level). */
  readonly ignoredKeys?: ReadonlyArray<string>
}

export const decodeOptions = (given: unknown, what: string): Result.Result<NormalizedOptions, InvalidParams> => {
  const input =
    isMcpConfig(given) || (Array.isArray(given) && given.length > 0 && given.every(isMcpConfig)) ? fromMcpConfigs(given) : given
  if (input instanceof InvalidParams) return Result.fail(input)
  if (!isObject(input)) {
    return Result.fail(new InvalidParams({ message: `${what} must be a JSON object`, issues: [`${what}: must be an object`] }))
  }
  const keys = checkKeys(input)
  // Every problem at once: the unknown keys first, then what the schema says of the rest (a
  // misspelt key and a wrong value in one file are fixed in one edit, not two runs).
  const decoded = decodeKnown(input, keys.ignored, what)
  if (keys.problems.length === 0) return decoded
  // A reserved key vanishes in decoding: what the schema says then is of a document nobody wrote.
  const reserved = keys.problems.some((p) => p.includes("is not allowed"))
  const issues = [...keys.problems, ...(Result.isFailure(decoded) && !reserved ? decoded.failure.issues : [])]
  return Result.fail(new InvalidParams({ message: `Invalid ${what}: ${issues.join("; ")}`, issues }))
}

/** The document decoded by the schema (its unknown keys already found: see checkKeys). */
const decodeKnown = (
  input: Record<string, unknown>,
  ignored: ReadonlyArray<string>,
  what: string
): Result.Result<NormalizedOptions, InvalidParams> => {
  // Two lists of servers: said first, whatever else is wrong with either (an empty `backends`
  // beside `mcpServers` is a file that meant one of them).
  const lists = (["backends", "mcpServers", "servers"] as const).filter((key) => input[key] !== undefined)
  if (lists.length > 1) {
    const issues = [`${lists[1]}: give one of backends, mcpServers or servers, not ${lists.join(" and ")}`]
    return Result.fail(new InvalidParams({ message: `Invalid ${what}: ${issues[0]}`, issues }))
  }
  return decodeOptionsResult(input).pipe(
    Result.map((options): GatewayOptions & { ignoredKeys?: ReadonlyArray<string> } =>
      ignored.length === 0 ? options : { ...options, ignoredKeys: ignored }
    ),
    Result.mapError((error) => {
      const issues = formatIssues(error)
      return new InvalidParams({ message: `Invalid ${what}: ${issues.join("; ")}`, issues })
    }),
    Result.flatMap((options) => {
      const { mcpServers: claude, servers, backends, defaults, ...rest } = options
      const mcpServers = claude ?? servers
      const field = claude === undefined ? "servers" : "mcpServers"
      if (mcpServers === undefined) {
        if (defaults !== undefined) {
          const issues = ["defaults: applies to the entries of mcpServers or servers, and there are none"]
          return Result.fail(new InvalidParams({ message: `Invalid ${what}: ${issues[0]}`, issues }))
        }
        return Result.succeed(backends === undefined ? rest : { ...rest, backends })
      }
      const keys = Object.keys(mcpServers)
      return fromMcpServers(mcpServers, defaults ?? {}, field).pipe(
        Result.mapError((error) => {
          // The converted list is indexed; the user wrote keys, so name the key.
          const issues = formatIssues(error, ([index, ...rest]) => [
            field,
            typeof index === "number" ? (keys[index] ?? index) : (index ?? ""),
            ...rest
          ])
          return new InvalidParams({ message: `Invalid ${what}: ${issues.join("; ")}`, issues })
        }),
        Result.map((converted) => ({ ...rest, backends: converted }))
      )
    })
  )
}

/**
 * A server name as a backend id: characters outside `[a-zA-Z0-9_-]` become `_`, at most 64, and a
 * name that two keys would share gets `_2`, `_3`...
 */
export const idsOf = (names: ReadonlyArray<string>): ReadonlyArray<string> => {
  const taken = new Set<string>()
  return names.map((name) => {
    const base = (name.replace(/[^a-zA-Z0-9_-]/g, "_") || "server").slice(0, 64)
    let id = base
    for (let n = 2; taken.has(id); n++) id = `${base.slice(0, 64 - String(n).length - 1)}_${n}`
    taken.add(id)
    return id
  })
}

/** Seed 002's `MCPConfig`: one server as `{serverName, transport, connection, auth}`. */
const isMcpConfig = (u: unknown): u is Record<string, unknown> => isObject(u) && typeof u.serverName === "string"

/**
 * One `MCPConfig` or an array of them, as the `servers` map it means: `connection` holds the
 * entry's own keys, `transport` is its `type`, a bearer `auth` becomes an Authorization header.
 * Other keys stay where the key check and the schema will judge them.
 */
const fromMcpConfigs = (given: unknown): Record<string, unknown> | InvalidParams => {
  const servers: Record<string, unknown> = {}
  for (const config of (Array.isArray(given) ? given : [given]) as Array<Record<string, unknown>>) {
    const { serverName, transport, connection, auth, ...rest } = config
    const name = serverName as string
    const problem = (issue: string) => new InvalidParams({ message: `Invalid ${name}: ${issue}`, issues: [`${name}.${issue}`] })
    if (connection !== undefined && !isObject(connection)) return problem("connection: must be an object")
    let authorization: Record<string, string> = {}
    if (auth !== undefined) {
      if (!isObject(auth) || (auth.type !== "bearer" && auth.type !== "none")) return problem("auth.type: must be bearer or none")
      if (auth.type === "bearer") {
        if (typeof auth.token !== "string" || auth.token.trim() === "") return problem("auth.token: must be a non-empty string")
        authorization = { Authorization: `Bearer ${auth.token}` }
      }
    }
    if (Object.hasOwn(servers, name)) return problem("serverName: the same name twice")
    const own = isObject(connection) ? connection : {}
    const headers = isObject(own.headers) ? own.headers : {}
    setOwn(servers, name, {
      ...rest,
      ...own,
      ...(transport === undefined ? {} : { type: transport }),
      // A `headers` that is not an object stays as it is, for the schema to refuse.
      ...(Object.keys(authorization).length === 0 || (own.headers !== undefined && !isObject(own.headers))
        ? {}
        : { headers: { ...headers, ...authorization } })
    })
  }
  return { servers }
}

/** The lists together, or undefined when none is given. */
const unionOf = (...lists: ReadonlyArray<ReadonlyArray<string> | undefined>): ReadonlyArray<string> | undefined => {
  const given = lists.filter((l): l is ReadonlyArray<string> => l !== undefined)
  return given.length === 0 ? undefined : [...new Set(given.flat())]
}

/** Drops the keys whose value is undefined (an optional field absent stays absent). */
const defined = <A extends Record<string, unknown>>(record: A): A =>
  Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as A

/**
 * Server map entries become backends, one per key, in file order, each over `defaults`. `timeout`
 * counts only in a `servers` map: Cline writes seconds under the same name in `mcpServers`.
 */
const fromMcpServers = (
  servers: typeof McpServers.Type,
  defaults: typeof ServerDefaults.Type,
  field: "mcpServers" | "servers"
) => {
  const names = Object.keys(servers)
  const ids = idsOf(names)
  return Schema.decodeUnknownResult(Backends, { errors: "all", reportInput: true })(
    Object.entries(servers).map(([name, entry], i) => {
      const s = { ...defaults, ...defined(entry), env: { ...defaults.env, ...entry.env } }
      return defined({
        id: ids[i]!,
        type: ((type) => (type === "streamableHttp" ? "streamable-http" : type))(s.type ?? s.transportType),
        command: s.command,
        url: s.url,
        headers: s.headers,
        args: s.args ?? [],
        env: s.env,
        cwd: s.cwd,
        description: s.description,
        // A name that had to change to be an id is kept for display.
        displayName: s.displayName ?? (ids[i] !== name ? name : undefined),
        requestTimeoutMs: s.requestTimeoutMs ?? (field === "servers" ? s.timeout : undefined),
        restartOnCrash: s.restartOnCrash,
        inheritEnv: s.inheritEnv,
        maxFrameBytes: s.maxFrameBytes,
        roots: s.roots,
        startupDelayMs: s.startupDelayMs ?? s.startupDelay,
        protocolVersion: s.protocolVersion,
        maxInstances: s.maxInstances,
        requiresStatefulConnection: s.requiresStatefulConnection,
        start: s.start,
        idleMs: s.idleMs,
        auth: s.auth,
        ...Object.fromEntries(EXPOSURE_KEYS.map((key) => [key, s[key]])),
        // What other clients call the tool filters, as theirs read them.
        allowTools: s.allowTools ?? s.includeTools,
        denyTools: unionOf(s.denyTools, s.excludeTools, s.disabledTools),
        enabled: s.enabled ?? s.disabled !== true
      })
    })
  )
}
