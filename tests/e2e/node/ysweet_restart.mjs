// A YSweetProvider across a server restart, driven by tests/e2e/test_ysweet_sdk.py over stdin/stdout:
// it connects through a getOrCreateDocAndToken auth endpoint (env RELAY_URL, EDIT_TOKEN, DOC_ID), writes,
// prints {"ready": …}; after the line "restarted" on stdin it waits to be connected again, writes once
// more, and prints {"done": …} once the server acknowledged that edit.

import { createInterface } from 'node:readline'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { DocumentManager } from '@y-sweet/sdk'
import { YSweetProvider } from '@y-sweet/client'

console.log = console.info = console.warn = (...args) => console.error(...args)
const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')
const { RELAY_URL, EDIT_TOKEN, DOC_ID } = process.env
const manager = new DocumentManager(`ys://${encodeURIComponent(EDIT_TOKEN)}@${new URL(RELAY_URL).host}`)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
async function until (check, timeout = 30000) {
  const deadline = Date.now() + timeout
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await sleep(20)
  }
}

const doc = new Y.Doc()
const closes = []
const provider = new YSweetProvider(() => manager.getOrCreateDocAndToken(DOC_ID), DOC_ID, doc, {
  WebSocketPolyfill: WebSocket, showDebuggerLink: false
})
provider.on('connection-close', (event) => closes.push(event?.code ?? null))
const text = doc.getText('contents')

await until(() => provider.status === 'connected')
text.insert(text.length, 'before restart.')
await until(() => !provider.hasLocalChanges)
say({ ready: text.toString() })

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() !== 'restarted') continue
  await until(() => closes.length > 0 && provider.status === 'connected')
  text.insert(text.length, ' after restart.')
  await until(() => !provider.hasLocalChanges)
  say({ done: text.toString(), closes })
  provider.disconnect()
  provider.destroy()
  provider.awareness.destroy()
  process.exit(0)
}
