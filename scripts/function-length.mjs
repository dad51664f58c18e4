/**
 * The rule "no function over 150 lines", checked: every function in src/ (declaration, expression,
 * arrow, method, accessor, constructor) spans at most MAX_LINES lines, from its first token to its
 * last (the doc comment above it not counted). A nested function is measured on its own, and its
 * lines count in the function around it too: splitting means naming the parts outside.
 *
 * Run by `npm run lint` (scripts/lint.mjs); alone, `node scripts/function-length.mjs` lists every
 * function over the bound. There is no allowlist: a function over it is split, not excused.
 */
import { readFileSync } from "node:fs"
import { join, relative, sep } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

export const MAX_LINES = 150

const FUNCTIONS = new Set([
  ts.SyntaxKind.FunctionDeclaration,
  ts.SyntaxKind.FunctionExpression,
  ts.SyntaxKind.ArrowFunction,
  ts.SyntaxKind.MethodDeclaration,
  ts.SyntaxKind.Constructor,
  ts.SyntaxKind.GetAccessor,
  ts.SyntaxKind.SetAccessor
])

/**
 * What a function is called: its own name, else the name it is bound to (`const run = () => ...`,
 * `{ serve: function* () {} }`), else "(anonymous)".
 */
const nameOf = (node, source) => {
  const named = (n) => (n.name !== undefined && !ts.isComputedPropertyName(n.name) ? n.name.getText(source) : undefined)
  if (node.kind === ts.SyntaxKind.Constructor) return "constructor"
  const own = named(node)
  if (own !== undefined) return own
  const parent = node.parent
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return named(parent) ?? "(anonymous)"
  return "(anonymous)"
}

/** The functions of one source text that span more than MAX_LINES lines: `{line, name, span}`, line 1-based. */
export const longFunctionsIn = (fileName, text) => {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const found = []
  const visit = (node) => {
    if (FUNCTIONS.has(node.kind)) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line
      const span = last - first + 1
      if (span > MAX_LINES) found.push({ line: first + 1, name: nameOf(node, source), span })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** The long functions of `files` (paths relative to `root`) under src/: `{where, name, span}`. */
export const longFunctions = (root, files) =>
  files
    .filter((f) => f.startsWith("src/") && /\.(c|m)?tsx?$/.test(f) && !f.endsWith(".d.ts"))
    .flatMap((f) =>
      longFunctionsIn(f, readFileSync(join(root, f), "utf8")).map(({ line, name, span }) => ({
        where: `${f}:${line}`,
        name,
        span
      }))
    )

/** Every file under `root`'s src/, relative to `root` (outside a git checkout: nothing says which are tracked). */
export const sourceFiles = (root) =>
  ts.sys.readDirectory(join(root, "src"), [".ts", ".tsx", ".mts", ".cts"]).map((f) => relative(root, f).split(sep).join("/"))

/** Prints each long function to stderr; the exit status: 1 when there is one. */
export const report = (root, files) => {
  const found = longFunctions(root, files)
  for (const { where, name, span } of found)
    process.stderr.write(`${where}: ${name} spans ${span} lines (at most ${MAX_LINES})\n`)
  return found.length > 0 ? 1 : 0
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL("..", import.meta.url))
  process.exit(report(root, sourceFiles(root)))
}
