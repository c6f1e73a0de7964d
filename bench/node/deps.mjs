// Load the e2e harness's installed packages (tests/e2e/node/node_modules) from bench/node without a
// package.json of our own. ESM entries are imported by file URL so that y-websocket's own `import 'yjs'`
// and ours resolve to the same module instance (two copies of yjs break its constructor checks).

import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'

const harnessRequire = createRequire(new URL('../../tests/e2e/node/package.json', import.meta.url))

const esmEntry = (name) => {
  const manifestPath = harnessRequire.resolve(`${name}/package.json`)
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'))
  const root = manifest.exports?.['.'] ?? manifest.exports
  const entry = (typeof root === 'string' ? root : root?.import ?? root?.module) ?? manifest.module ?? manifest.main
  return pathToFileURL(join(dirname(manifestPath), entry)).href
}

export const Y = await import(esmEntry('yjs'))
export const { WebsocketProvider } = await import(esmEntry('y-websocket'))
// ws is CommonJS; require gives the same class its ESM wrapper re-exports.
export const WebSocket = harnessRequire('ws')

// Every provider adds a process 'exit' listener; fifty of them are expected here, not a leak.
process.setMaxListeners(0)

// y-websocket logs through console; keep stdout for our single JSON result line.
console.log = console.info = console.debug = (...args) => console.error(...args)

export const percentile = (sorted, p) => {
  if (sorted.length === 0) return null
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
export const nextMacrotask = () => new Promise((resolve) => setImmediate(resolve))

/** Resolve when `predicate()` holds (checked every `everyMs`), reject after `timeoutMs`. */
export const waitUntil = async (predicate, timeoutMs, what, everyMs = 2) => {
  const deadline = performance.now() + timeoutMs
  while (!predicate()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(everyMs)
  }
}

/** A y-websocket client on its own Y.Doc; BroadcastChannel is off so every update goes through the server. */
export const connectClient = ({ serverUrl, room, params }) => {
  const doc = new Y.Doc()
  const provider = new WebsocketProvider(serverUrl, room, doc, {
    params: params ?? {},
    WebSocketPolyfill: WebSocket,
    disableBc: true,
    // Stop on a refused connection instead of retrying forever: a benchmark must fail loudly.
    shouldReconnect: () => false
  })
  const client = { doc, provider, text: doc.getText('contents'), synced: false, closed: null }
  provider.on('sync', (synced) => { if (synced) client.synced = true })
  provider.on('connection-close', (event) => { if (event) client.closed = `${event.code} ${event.reason ?? ''}` })
  return client
}

export const readArgs = () => {
  const raw = process.argv[2]
  if (!raw) throw new Error('usage: node script.mjs \'{"serverUrl": ..., ...}\'')
  return JSON.parse(raw)
}

export const runMain = (main) => {
  main().then(
    (result) => { process.stdout.write(JSON.stringify(result) + '\n'); process.exit(0) },
    (error) => { process.stdout.write(JSON.stringify({ error: String(error?.stack ?? error) }) + '\n'); process.exit(1) }
  )
}
