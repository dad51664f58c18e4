/**
 * `count`: how many calls a subject, a tool or a backend may make, and how many at once. No limits
 * are configured today: every call passes. Quotas are counted here, in one place.
 */
import type { Stage } from "../Stage.js"

export const make = (): Stage => ({ name: "count", run: (call, next) => next(call) })
