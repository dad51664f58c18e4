/**
 * One renewal of a token at a time across a team's gateways. Servers rotate refresh tokens and,
 * seeing a spent one used again, revoke the whole grant: two gateways sharing tokens (see
 * gateway/SharedFiles) that both renew at the moment a token is due would sign every gateway out.
 * So a gateway renews only when it has the turn for that refresh token (one per refresh token: the
 * next one is a new turn); the others wait for the new tokens to reach their disk.
 *
 * Without a team (one gateway, a one-off command) every renewal is this process's own.
 */

type Ask = (turn: string) => Promise<boolean>

let ask: Ask | undefined

/** Who decides from now on (the team's store); the returned function stops that. */
export const decideWith = (decide: Ask): (() => void) => {
  ask = decide
  return () => {
    if (ask === decide) ask = undefined
  }
}

/** Whether this process renews (`turn`: the tokens' entry and their refresh token's hash) now; true alone. */
export const mayRenew = (turn: string): Promise<boolean> => (ask === undefined ? Promise.resolve(true) : ask(turn))
