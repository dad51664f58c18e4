/**
 * A call's trail: what each stage of the pipeline said of it, in order, the one record a call (a
 * refused one too) is explained by. The pipeline keeps it for the call's length and gives each
 * stage a page of its own (see Stage): a stage adds to the trail under its own name and reads what
 * was said so far, but cannot alter, remove or reorder what an earlier stage said, nor speak for
 * another stage. `record` reads the finished trail as the call ends; the call's caller gets a copy
 * (see Pipeline).
 */
import type { Decision } from "../../call/Vocabulary.js"

/** What a stage says of a call: a decision, whose stage is the page's. */
export type Said = Omit<Decision, "stage">

/** A stage's page of the trail. */
export interface Page {
  /** Adds what this stage said at the end of the trail, under this stage's name. */
  readonly note: (said: Said) => void
  /** The trail so far, frozen: changing it changes nothing. */
  readonly decisions: () => ReadonlyArray<Decision>
}

/** The trail of one call, as the pipeline keeps it. */
export interface Trail {
  /** The page of the stage named `stage`. */
  readonly pageOf: (stage: string) => Page
  readonly decisions: () => ReadonlyArray<Decision>
}

export const make = (): Trail => {
  const said: Array<Decision> = []
  const decisions = () => Object.freeze([...said])
  return {
    decisions,
    pageOf: (stage) => ({
      // A frozen copy (and of its target): what a stage handed in cannot be changed after by it either.
      note: ({ target, ...rest }) => {
        said.push(Object.freeze({ ...rest, ...(target === undefined ? {} : { target: Object.freeze({ ...target }) }), stage }))
      },
      decisions
    })
  }
}
