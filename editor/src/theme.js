// The text's highlighting in the page's colour variables (editor.css), so that it follows the admin's light
// or dark theme without a second style: CodeMirror's default style has fixed colours made for a white page.

import { HighlightStyle } from "@codemirror/language";
import { tags as t } from "@lezer/highlight";

const v = (name) => `var(--lr-syn-${name})`;

export const pageHighlight = HighlightStyle.define([
  { tag: t.heading, color: v("heading"), fontWeight: "bold" },
  { tag: [t.heading1, t.heading2], color: v("heading"), fontWeight: "bold", textDecoration: "none" },
  { tag: t.emphasis, color: v("emphasis"), fontStyle: "italic" },
  { tag: t.strong, color: v("emphasis"), fontWeight: "bold" },
  { tag: t.strikethrough, textDecoration: "line-through" },
  { tag: t.link, color: v("link"), textDecoration: "underline" },
  { tag: t.url, color: v("url") },
  { tag: t.monospace, color: v("code") },
  { tag: t.quote, color: v("quote"), fontStyle: "italic" },
  { tag: [t.processingInstruction, t.meta, t.contentSeparator], color: v("meta") },
  { tag: [t.keyword, t.operatorKeyword, t.modifier, t.definitionKeyword], color: v("keyword") },
  { tag: [t.string, t.special(t.string), t.regexp], color: v("string") },
  { tag: [t.number, t.bool, t.atom, t.literal], color: v("number") },
  { tag: [t.comment, t.lineComment, t.blockComment], color: v("comment"), fontStyle: "italic" },
  { tag: [t.typeName, t.className, t.propertyName, t.attributeName, t.tagName], color: v("link") },
  { tag: t.invalid, color: v("invalid") },
]);
