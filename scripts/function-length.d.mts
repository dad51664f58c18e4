// The types of function-length.mjs, for the test that imports it.
export declare const MAX_LINES: number
export declare const ALLOWED: ReadonlySet<string>
export interface LongFunction {
  readonly line: number
  readonly name: string
  readonly span: number
}
export declare const longFunctionsIn: (fileName: string, text: string) => Array<LongFunction>
export declare const longFunctions: (
  root: string,
  files: ReadonlyArray<string>
) => Array<{ readonly where: string; readonly name: string; readonly span: number; readonly allowed: boolean }>
export declare const sourceFiles: (root: string) => Array<string>
export declare const report: (root: string, files: ReadonlyArray<string>) => 0 | 1
