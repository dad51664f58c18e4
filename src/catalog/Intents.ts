/**
 * A request's intents: the parts of a task that each need a tool of their own. People ask for
 * tasks ("analyze Apple's stock for the past year and summarize it in a PPT"), and a ranking of the
 * whole request lets its strongest words take every place. Split on what joins the steps of a task
 * in plain English: sentence ends, semicolons, commas, "and", "then", "also", "finally", "after
 * that"; a part left with one word that says something is folded into the one before, one with
 * none ("Then,") is dropped.
 */
import { bounded, MAX_RANKED_QUERY_CHARS, splitWords, STOP_WORDS } from "./Analysis.js"

/**
 * What joins the steps of a task: each a place to split. Linear: a run of punctuation or of spaces
 * is tried from its start only (the lookbehinds), where `[.;!?]+(?:\s+|$)` alone would retry from
 * every character of a run of dots that ends in no space (quadratic: 80 KB of "." took 17 s).
 */
const JOINS =
  /(?:(?<![.;!?])[.;!?]+(?![.;!?])(?:\s+|$)|\n+|,\s*|(?<!\s)\s+(?:and then|and also|and|then|also|finally|afterwards|after that|next|plus|as well as)\s+)/i

/** At most this many intents (a request of a hundred clauses is not a hundred lists). */
export const MAX_INTENTS = 8

const meaningful = (part: string): number => splitWords(part).filter((w) => w.length > 1 && !STOP_WORDS.has(w)).length

/** The request's intents, in order; one (the request) when it has a single step. */
export const intentsOf = (request: string): ReadonlyArray<string> => {
  const parts: Array<string> = []
  // What ranking reads of a request: its start (the model still gets all of it).
  for (const raw of bounded(request, MAX_RANKED_QUERY_CHARS).split(JOINS)) {
    const part = raw.trim()
    const says = meaningful(part)
    // A join word alone ("Then,") says nothing; one word folds into the part before.
    if (says === 0) continue
    if (says < 2 && parts.length > 0) parts[parts.length - 1] = `${parts[parts.length - 1]} ${part}`
    else parts.push(part)
  }
  const kept = parts
  return kept.length <= MAX_INTENTS ? kept : [...kept.slice(0, MAX_INTENTS - 1), kept.slice(MAX_INTENTS - 1).join(" ")]
}
