/**
 * What an orchestration is asked (`agentify/orchestrateTask`'s params, the `agentify_orchestrate`
 * tool's arguments), and their check: -32602 names each problem with its path.
 */
import { Result, Schema } from "effect"
import { formatIssues } from "../config/Config.js"
import { InvalidParams } from "../protocol/Errors.js"
import { OrchestrateParams } from "../protocol/Mcp.js"

/**
 * What an orchestration is asked. Checked again when it runs (an app may pass a `maxSteps` of
 * 100): a value out of range fails with InvalidParams.
 */
export type OrchestrateRequest = typeof OrchestrateParams.Encoded

const decodeParams = Schema.decodeUnknownResult(OrchestrateParams, { errors: "all", reportInput: true })

/** Validates `{query, context}`; -32602 names each problem with its path. */
export const validateParams = (params: unknown): Result.Result<OrchestrateParams, InvalidParams> =>
  decodeParams(params ?? {}).pipe(
    Result.mapError((error) => {
      const issues = formatIssues(error)
      return new InvalidParams({ message: `Invalid params: ${issues.join("; ")}`, issues })
    })
  )
