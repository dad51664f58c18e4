/**
 * "Did you mean": the known word closest to a mistyped one (a config key, a command-line option
 * or subcommand), by edit distance, when it is close enough to be the likely intent.
 */

/** Edits between two words (insertions, deletions, substitutions). */
const editDistance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const substitute = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitute)
    }
    previous = current
  }
  return previous[b.length] ?? 0
}

/**
 * The word of `known` closest to `given` (case aside), or undefined when none is within a third
 * of its length (at least two edits; one for words of three letters or fewer). A known word that
 * starts with `given` is closest of all (`--serv` for `--servers-dir`).
 */
export const closest = (given: string, known: ReadonlyArray<string>): string | undefined => {
  const word = given.toLowerCase()
  let best: string | undefined
  let bestDistance = Number.POSITIVE_INFINITY
  for (const candidate of known) {
    const lower = candidate.toLowerCase()
    const d = lower.startsWith(word) && word.length >= 2 ? 0.5 : editDistance(word, lower)
    if (d < bestDistance) [best, bestDistance] = [candidate, d]
  }
  const allowed = word.length <= 3 ? 1 : Math.max(2, Math.floor(word.length / 3))
  return bestDistance <= allowed ? best : undefined
}
