/**
 * The model's arguments checked against the tool's `inputSchema` before a backend sees them, with
 * Ajv (JSON Schema draft-07, and 2020-12 when the schema says `$schema` .../2020-12/...). A schema
 * Ajv cannot compile is said once in the log and its calls go through unchecked: a backend's odd
 * schema must not make its tool unusable.
 *
 * Ajv is loaded on the first check (it is 120 KB the stdio start does not need).
 */
import { Effect } from "effect"
import type { ValidateFunction } from "ajv"
import { createRequire } from "node:module"

/** Each problem with its path: `/path: must be string`, `(root): must have required property 'path'`. */
export type Problems = ReadonlyArray<string>

type Validators = {
  readonly draft07: import("ajv").default
  readonly draft2020: import("ajv/dist/2020.js").default
}

let validators: Validators | undefined
const load = (): Validators => {
  if (validators !== undefined) return validators
  // CommonJS packages: required, so that the bundle and tsc's output load them alike.
  const require = createRequire(import.meta.url)
  const Ajv = (require("ajv") as { default: typeof import("ajv").default }).default
  const Ajv2020 = (require("ajv/dist/2020.js") as { default: typeof import("ajv/dist/2020.js").default }).default
  // Not strict: backends' schemas carry keywords and formats Ajv does not know, which mean nothing
  // to the check. No logger: Ajv would write to the console.
  // Own properties only: `toString` is not given because every object inherits it.
  const options = { strict: false, allErrors: true, validateFormats: false, logger: false, ownProperties: true } as const
  validators = { draft07: new Ajv(options), draft2020: new Ajv2020(options) }
  return validators
}

/** Compiled once per schema object; `null`: it could not be compiled (unchecked). */
const compiled = new WeakMap<object, ValidateFunction | null>()
const warned = new Set<string>()

const compile = (schema: Record<string, unknown>): ValidateFunction | null | string => {
  const known = compiled.get(schema)
  if (known !== undefined) return known
  const { draft07, draft2020 } = load()
  const dialect = typeof schema.$schema === "string" && schema.$schema.includes("2020-12") ? draft2020 : draft07
  try {
    // Its `$schema` and `$id` are left out: a second tool with the same `$id` must not clash.
    const { $schema: _s, $id: _i, ...body } = schema
    const validate = dialect.compile(body)
    compiled.set(schema, validate)
    return validate
  } catch (error) {
    compiled.set(schema, null)
    return error instanceof Error ? error.message : String(error)
  }
}

/**
 * The problems of `args` under `schema` (empty: valid); undefined when the schema could not be
 * compiled, which is logged once per tool.
 */
export const check = (
  tool: string,
  schema: Record<string, unknown>,
  args: Record<string, unknown>
): Effect.Effect<Problems | undefined> =>
  Effect.suspend(() => {
    const validate = compile(schema)
    if (typeof validate === "string" || validate === null) {
      if (!warned.has(tool)) {
        warned.add(tool)
        return Effect.as(
          Effect.logWarning(
            `the inputSchema of ${tool} cannot be checked (${typeof validate === "string" ? validate : "it did not compile"}): its calls go through unchecked`
          ),
          undefined
        )
      }
      return Effect.succeed(undefined)
    }
    if (validate(args)) return Effect.succeed([])
    return Effect.succeed(
      (validate.errors ?? []).map((e) => `${e.instancePath === "" ? "(root)" : e.instancePath}: ${e.message ?? "is invalid"}`)
    )
  })
