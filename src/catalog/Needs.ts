/**
 * What a request needs that it does not name: read from its shape, in general terms, as a small
 * table of data (never a task's own words). A report "in /root/markdown/x.md" needs a writer of
 * Markdown files; a ".docx" to make needs a word processor; "next Wednesday" needs today's date; a
 * place needs a map. Each need is a phrase ranked like a request of its own (see TaskRank).
 *
 * Every pattern is tested on its own and is linear in the text: "a word that makes" and "a file's
 * extension" are two tests, not one pattern `A[^]*B|B[^]*A`, which rescans to the end of the text
 * from every match of its first part (quadratic: 100 KB of "save " took 20 s).
 */
import { bounded, MAX_RANKED_QUERY_CHARS } from "./Analysis.js"

export interface Need {
  /** What it is, for the docs and the debug UI. */
  readonly name: string
  /** When the request implies it: each pattern matches somewhere in it. */
  readonly when: ReadonlyArray<RegExp>
  /** What to look for: a phrase in tools' own words. */
  readonly wants: string
}

/** A file's extension in the request (a path, or "a .docx"). */
const file = (extensions: string) => new RegExp(`[\\w/~.-]\\.(?:${extensions})\\b`, "i")
/** Words that make, save or export something. */
const MAKES = String.raw`\b(?:save|saved|write|writes|create|creates|generate|generates|make|draft|export|produce|output|prepare|compile|convert|put|store|give me|provide)\b|\b(?:report|document|summary|write-up|page|script|article|guide|walkthrough|overview|notes)\b\s+(?:in|to|at|on|as|into)\b`
const READS = String.raw`\b(?:read|open|load|analy[sz]e|parse|extract|summari[sz]e|review|check|from|under|in)\b`
/** Both somewhere in the request, in either order: two independent tests, each linear. */
const both = (a: string, b: RegExp): ReadonlyArray<RegExp> => [new RegExp(a, "i"), b]

const TEXT_FILES = "md|markdown|txt|html?|py|ts|tsx|js|json|csv|ya?ml|xml|css|sh|sql|bib|java|go|rs"

export const NEEDS: ReadonlyArray<Need> = [
  { name: "writes a text file", when: both(MAKES, file(TEXT_FILES)), wants: "write a file to a path" },
  { name: "reads a text file", when: both(READS, file(TEXT_FILES)), wants: "read the text of a file" },
  {
    name: "makes a Word document",
    when: both(MAKES, /\.docx?\b|\bword document\b/i),
    wants: "create a word document and add a heading and paragraphs"
  },
  { name: "reads a Word document", when: both(READS, /\.docx?\b|\bword document\b/i), wants: "get the text of a word document" },
  { name: "makes a PDF", when: both(MAKES, /\.pdf\b|\bpdf\b/i), wants: "create a document and convert it to pdf" },
  { name: "reads a PDF", when: both(READS, /\.pdf\b/i), wants: "read the text of a pdf file" },
  {
    name: "makes a presentation",
    when: both(MAKES, /\.pptx?\b|\b(?:presentation|slides?|ppt|powerpoint|deck)\b/i),
    wants: "create a presentation and add slides"
  },
  {
    name: "reads a spreadsheet",
    when: both(READS, /\.xlsx?\b|\.xlsm\b|\bspreadsheet\b|\bexcel\b/i),
    wants: "read the data of an excel sheet"
  },
  {
    name: "makes a spreadsheet",
    when: both(MAKES, /\.xlsx?\b|\bspreadsheet\b|\bexcel\b/i),
    wants: "create an excel workbook and write data to a sheet"
  },
  { name: "makes a chart", when: [/\b(?:chart|plot|graph|visuali[sz]e|diagram)\b/i], wants: "generate a chart" },
  {
    name: "a date relative to today",
    when: [
      /\b(?:today|tonight|tomorrow|yesterday|now|current(?:ly)?|latest|recent(?:ly)?|upcoming|near future|this (?:week|weekend|month|year)|(?:next|last|past|coming) (?:\w+ )?(?:days?|weeks?|weekends?|months?|years?|quarters?|monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b/i
    ],
    wants: "get the current date and time"
  },
  {
    name: "a place",
    when: [/\b(?:near|nearby|around|where|location|address|directions?|route|distance|map)\b/i],
    wants: "search places and geocode an address on a map"
  },
  {
    name: "a web page or a site",
    when: [/\bhttps?:\/\/\S+|\bwww\.\S+|(?<![\w-])[a-z0-9][a-z0-9-]*\.(?:com|org|net|io|dev|ai|cn|co|gov|edu|uk|de|fr|jp)\b/i],
    wants: "fetch a web page by url and look up its domain"
  },
  {
    name: "information to find",
    when: [
      /\b(?:find|search|look up|lookup|research|background|references?|sources?|learn about|information (?:about|on)|who is|what is)\b/i
    ],
    wants: "search the web for information"
  },
  {
    name: "what is new or trending",
    when: [/\b(?:news|trending|trends|hot (?:topics|list|searches)|headlines|what'?s new|popular now|top stories)\b/i],
    wants: "get trending news and hot lists"
  }
]

/** The phrases of what `request` implies it needs, in the table's order (read as ranking reads a request: its start). */
export const needsOf = (request: string): ReadonlyArray<Need> => {
  const text = bounded(request, MAX_RANKED_QUERY_CHARS)
  return NEEDS.filter((need) => need.when.every((pattern) => pattern.test(text)))
}
