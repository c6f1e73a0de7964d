// Builds the review page as one self-contained HTML file (an MCP Apps resource is one document): the
// template with the bundled CSS and JS inlined. Deterministic: the same inputs give the same bytes.
// Usage: node inline.mjs TEMPLATE CSS JS OUT
import { readFileSync, writeFileSync } from "node:fs";

const [template, css, js, out] = process.argv.slice(2);
const text = (path) => readFileSync(path, "utf8").trim();
// "</script" or "</style" inside the code would close the element early; "<\/" means the same to JS and CSS.
const inert = (code, tag) => code.replace(new RegExp(`</${tag}`, "gi"), `<\\/${tag}`);
const page = text(template)
  .replace("/*REVIEW_CSS*/", () => inert(text(css), "style"))
  .replace("/*REVIEW_JS*/", () => inert(text(js), "script"));
writeFileSync(out, `${page}\n`);
