/**
 * The circuit an endpoint asked on the side goes through (see catalog/semantic/Circuit), on a clock of
 * the test's own: closed lets all through; a failure opens it for a second, then one trial goes
 * while the others wait; a failed trial opens it longer, a good one closes it.
 */
import { describe, expect, it } from "vitest"
import * as Circuit from "../../../../src/catalog/semantic/Circuit.js"

describe("Circuit", () => {
  it("opens on a failure, lets one trial through after the backoff, backs off longer when it fails, closes when it works", () => {
    let now = 0
    const circuit = Circuit.make(() => now)
    expect([circuit.admit(), circuit.admit()]).toEqual([true, true])
    circuit.failed()
    // The others in flight fail too: one outage, one step.
    circuit.failed()
    expect(circuit.state()).toBe("open")
    expect(circuit.admit()).toBe(false)
    now += Circuit.delayAfter(1)
    expect(circuit.state()).toBe("half-open")
    expect([circuit.admit(), circuit.admit()]).toEqual([true, false])
    circuit.failed()
    now += Circuit.delayAfter(1)
    expect(circuit.admit()).toBe(false)
    now += Circuit.delayAfter(2) - Circuit.delayAfter(1)
    expect(circuit.admit()).toBe(true)
    circuit.succeeded()
    expect(circuit.state()).toBe("closed")
    expect([circuit.admit(), circuit.admit()]).toEqual([true, true])
  })

  it("backs off from a second, doubling, to five minutes at most", () => {
    expect([1, 2, 3].map(Circuit.delayAfter)).toEqual([1_000, 2_000, 4_000])
    expect(Circuit.delayAfter(50)).toBe(300_000)
  })
})
