/**
 * The audit log's id of the orchestration or script run the current fiber works for (set by the
 * gateway around each run when the audit log is on): its calls name it as their parent, and the
 * debug UI shows it beside the run, so a run on the page is found in the log.
 */
import { Context } from "effect"

/** Read with `yield* current`, set with `Effect.provideService(current, id)` around a run. */
export const current = Context.Reference<string | undefined>("mcp-agentify/AuditRun", { defaultValue: () => undefined })
