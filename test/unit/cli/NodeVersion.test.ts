import { describe, expect, it } from "vitest"
import { supported } from "../../../src/cli/NodeVersion.js"

describe("the Node the gateway needs", () => {
  it("22.19 and later, whatever the form of the version", () => {
    expect(["22.19.0", "v22.19.0", "22.23.3", "23.0.0", "24.21.0", "26.12.1"].map(supported)).toEqual([
      true,
      true,
      true,
      true,
      true,
      true
    ])
    expect(["22.18.9", "v22.0.0", "20.20.2", "18.20.8", "4.9.1"].map(supported)).toEqual([false, false, false, false, false])
  })
})
