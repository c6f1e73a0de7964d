#!/usr/bin/env node
// One simulated Yjs user: a Y.Doc plus the real npm y-websocket provider, driven by the Python e2e tests.
//
// Protocol (one JSON object per line):
//   stdin   {"id": 1, "cmd": "insert", "index": 0, "text": "hi"}
//   stdout  {"id": 1, "result": ...}  or  {"id": 1, "error": "message"}   (exactly one reply per command)
//   stdout  {"event": "synced" | "status" | "connection-close" | "closed" | "connection-error" |
//            "permission-denied" | "message" | "update" | "awareness" | "error", ...}   (unsolicited)
// Commands run concurrently, so a pending waitFor* never blocks the edits that will satisfy it.
// stdout carries the protocol only; library logging is sent to stderr.

import { createInterface } from 'node:readline'
import { isDeepStrictEqual } from 'node:util'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { WebsocketProvider } from 'y-websocket'
import * as awarenessProtocol from 'y-protocols/awareness'
import * as authProtocol from 'y-protocols/auth'
import * as decoding from 'lib0/decoding'

const MESSAGE_AUTH = 2
const POLL_MS = 20

console.log = console.info = console.debug = (...args) => console.error(...args)

const send = (obj) => { process.stdout.write(JSON.stringify(obj) + '\n') }
const emit = (event, fields = {}) => send({ event, ...fields })

const doc = new Y.Doc()
const awareness = new awarenessProtocol.Awareness(doc)
/** @type {WebsocketProvider | null} */
let provider = null
let reportUpdates = false

const toBase64 = (bytes) => Buffer.from(bytes).toString('base64')
const fromBase64 = (text) => new Uint8Array(Buffer.from(text, 'base64'))

// Replace y-websocket's auth handler (it only logs) so tests can see "permission denied", and catch
// message types y-websocket does not know (e.g. 102, sync status) instead of letting it log and drop them.
const instrumentHandlers = (prov) => {
  const handlers = prov.messageHandlers
  handlers[MESSAGE_AUTH] = (_encoder, decoder) => {
    authProtocol.readAuthMessage(decoder, prov.doc, (_doc, reason) => emit('permission-denied', { reason }))
  }
  const unknownHandler = (_encoder, decoder, _prov, _emitSynced, messageType) => {
    emit('message', { type: messageType, payload: toBase64(decoder.arr.subarray(decoder.pos)) })
  }
  prov.messageHandlers = new Proxy(handlers, {
    get (target, key) {
      const handler = target[key]
      if (handler === undefined && typeof key === 'string' && /^\d+$/.test(key)) return unknownHandler
      return handler
    }
  })
}

const attachEvents = (prov) => {
  prov.on('status', ({ status }) => emit('status', { status }))
  prov.on('sync', (synced) => emit('synced', { synced }))
  prov.on('connection-close', (event) => {
    // event is null when the provider closed the socket itself (disconnect() or its 30 s watchdog)
    emit('connection-close', event === null
      ? { code: null, reason: null, wasClean: null, local: true }
      : { code: event.code, reason: String(event.reason ?? ''), wasClean: event.wasClean ?? null, local: false })
  })
  // y-websocket >= 3.1 emits "closed" when a 4400-4499 close code made it stop reconnecting
  prov.on('closed', ({ code, reason }) => emit('closed', { code, reason: String(reason ?? '') }))
  prov.on('connection-error', (event) => emit('connection-error', { message: String(event?.message ?? event?.error ?? '') }))
}

doc.on('update', (update, origin) => {
  if (reportUpdates) emit('update', { remote: provider !== null && origin === provider, length: update.length })
})
awareness.on('change', ({ added, updated, removed }, origin) => {
  if (reportUpdates) emit('awareness', { added, updated, removed, local: origin === 'local' })
})
// Awareness messages from the server that changed or renewed anything ('update' fires once per message).
let awarenessMessages = 0
awareness.on('update', (_changes, origin) => { if (origin !== 'local') awarenessMessages++ })

const requireProvider = () => {
  if (provider === null) throw new Error('not connected: send "connect" first')
  return provider
}

const textOf = (name) => doc.getText(name ?? 'contents')
const mapOf = (name) => {
  if (typeof name !== 'string' || name === '') throw new Error('map name required')
  return doc.getMap(name)
}
const asInt = (value, what) => {
  if (!Number.isInteger(value) || value < 0) throw new Error(`${what} must be a non-negative integer`)
  return value
}

// Resolve when check() returns {done: true, value}; re-checked on every doc change and on a short poll
// (sync state and awareness change without touching the doc).
const waitUntil = (check, timeoutMs, describe) => new Promise((resolve, reject) => {
  let finished = false
  const finish = (fn, value) => {
    if (finished) return
    finished = true
    doc.off('update', attempt)
    clearInterval(poll)
    clearTimeout(timer)
    fn(value)
  }
  function attempt () {
    let outcome
    try { outcome = check() } catch (err) { finish(reject, err); return }
    if (outcome.done) finish(resolve, outcome.value)
  }
  const poll = setInterval(attempt, POLL_MS)
  const timer = setTimeout(() => finish(reject, new Error(`timeout after ${timeoutMs} ms: ${describe()}`)), timeoutMs ?? 10000)
  doc.on('update', attempt)
  attempt()
})

// The UTF-16 offset of the `codePoints`-th code point of `text` (its end past the last): an index worked
// out here, on the text as it is now, never falls between the halves of a surrogate pair.
const utf16Offset = (text, codePoints) => {
  let offset = 0
  let seen = 0
  for (const char of text) {
    if (seen === codePoints) break
    offset += char.length
    seen += 1
  }
  return offset
}

const applyOp = (op) => {
  switch (op.op ?? op.cmd) {
    case 'insert': {
      const ytext = textOf(op.name)
      const index = asInt(op.index, 'index')
      ytext.insert(op.codePoints ? utf16Offset(ytext.toString(), index) : index, String(op.text))
      return
    }
    case 'delete': textOf(op.name).delete(asInt(op.index, 'index'), asInt(op.length, 'length')); return
    case 'mapSet': mapOf(op.name).set(String(op.key), op.value); return
    case 'mapDelete': mapOf(op.name).delete(String(op.key)); return
    default: throw new Error(`unknown op ${JSON.stringify(op.op ?? op.cmd)} (insert, delete, mapSet, mapDelete)`)
  }
}

const awarenessStates = () => Object.fromEntries(
  Array.from(awareness.getStates().entries(), ([clientId, state]) => [String(clientId), state])
)

const commands = {
  connect ({ serverUrl, room, params, headers, awarenessState, reportUpdates: report }) {
    if (provider !== null) throw new Error('already connected')
    if (typeof serverUrl !== 'string' || typeof room !== 'string') throw new Error('serverUrl and room required')
    reportUpdates = Boolean(report)
    if (awarenessState !== undefined) awareness.setLocalState(awarenessState)
    // Request headers (a browser session's Cookie and Origin) go on every (re)connect.
    const WithHeaders = headers
      ? class extends WebSocket { constructor (url, protocols) { super(url, protocols, { headers }) } }
      : WebSocket
    provider = new WebsocketProvider(serverUrl, room, doc, {
      WebSocketPolyfill: WithHeaders,
      disableBc: true,
      params: params ?? {},
      awareness,
      connect: false
    })
    instrumentHandlers(provider)
    attachEvents(provider)
    provider.connect()
    return { clientId: doc.clientID, url: provider.url }
  },
  info () {
    return {
      clientId: doc.clientID,
      connected: provider?.wsconnected ?? false,
      synced: provider?.synced ?? false,
      shouldConnect: provider?.shouldConnect ?? false,
      url: provider?.url ?? null
    }
  },
  getText ({ name }) { return textOf(name).toString() },
  insert (op) { applyOp({ ...op, op: 'insert' }); return null },
  delete (op) { applyOp({ ...op, op: 'delete' }); return null },
  getMap ({ name }) { return mapOf(name).toJSON() },
  mapSet (op) { applyOp({ ...op, op: 'mapSet' }); return null },
  mapDelete (op) { applyOp({ ...op, op: 'mapDelete' }); return null },
  // Yjs's own PermanentUserData, as Relay.md clients keep the `users` map: this client's id under `user`.
  registerUser ({ user }) {
    new Y.PermanentUserData(doc, doc.getMap('users')).setUserMapping(doc, doc.clientID, String(user))
    return doc.clientID
  },
  // Who wrote which text, as an editor attributes it: runs of the text's live items by client id, each
  // named by Yjs's PermanentUserData over the `users` map (null: no one registered that client).
  authorship ({ name }) {
    const users = new Y.PermanentUserData(doc, doc.getMap('users'))
    const runs = []
    for (let item = textOf(name)._start; item !== null; item = item.right) {
      if (item.deleted || !item.countable) continue
      const text = item.content.getContent().join('')
      const removedBy = (other) => (other !== null && other.deleted ? users.getUserByDeletedId(other.id) ?? null : null)
      let last = runs[runs.length - 1]
      if (last !== undefined && last.client === item.id.client && !item.left?.deleted) last.text += text
      else {
        last = { client: item.id.client, user: users.getUserByClientId(item.id.client) ?? null, text, removedBefore: removedBy(item.left) }
        runs.push(last)
      }
      last.removedAfter = removedBy(item.right)
    }
    return runs
  },
  transact ({ ops }) {
    if (!Array.isArray(ops)) throw new Error('ops must be a list')
    doc.transact(() => ops.forEach(applyOp))
    return null
  },
  waitForText ({ name, equals, contains, timeoutMs }) {
    if (equals === undefined && contains === undefined) throw new Error('equals or contains required')
    const text = textOf(name)
    return waitUntil(() => {
      const current = text.toString()
      const done = (equals === undefined || current === equals) && (contains === undefined || current.includes(contains))
      return { done, value: current }
    }, timeoutMs, () => `text is ${JSON.stringify(text.toString())}, wanted ` +
      (equals !== undefined ? `equals ${JSON.stringify(equals)}` : `contains ${JSON.stringify(contains)}`))
  },
  waitForMap ({ name, key, present = true, value, timeoutMs }) {
    const map = mapOf(name)
    return waitUntil(() => {
      const has = map.has(key)
      let done = has === Boolean(present)
      if (done && present && value !== undefined) done = isDeepStrictEqual(map.toJSON()[key], value)
      return { done, value: map.toJSON() }
    }, timeoutMs, () => `${name} is ${JSON.stringify(map.toJSON())}, wanted key ${JSON.stringify(key)} ` +
      (present ? 'present' : 'absent') + (value !== undefined ? ` = ${JSON.stringify(value)}` : ''))
  },
  waitSynced ({ timeoutMs }) {
    const prov = requireProvider()
    return waitUntil(() => ({ done: prov.synced, value: true }), timeoutMs, () => `not synced (connected: ${prov.wsconnected})`)
  },
  waitForAwareness ({ count, timeoutMs }) {
    return waitUntil(() => ({ done: awareness.getStates().size >= count, value: awarenessStates() }), timeoutMs,
      () => `${awareness.getStates().size} awareness states, wanted ${count}: ${JSON.stringify(awarenessStates())}`)
  },
  awarenessStates () { return awarenessStates() },
  // Where a Yjs relative position (JSON, as cursors travel in awareness) points in this client's text.
  resolvePosition ({ position }) {
    const absolute = Y.createAbsolutePositionFromRelativePosition(Y.createRelativePositionFromJSON(position), doc)
    return absolute === null ? null : { index: absolute.index, type: absolute.type === textOf() ? 'contents' : null }
  },
  setAwareness ({ state }) { awareness.setLocalState(state ?? null); return null },
  // What the y-protocols client does every 15 s to stay present: the same state under a newer clock.
  renewAwareness () { awareness.setLocalState(awareness.getLocalState()); return null },
  awarenessClocks () {
    const clocks = Object.fromEntries(Array.from(awareness.meta.entries(), ([id, meta]) => [String(id), meta.clock]))
    return { clocks, messages: awarenessMessages }
  },
  stateVector () { return toBase64(Y.encodeStateVector(doc)) },
  encodeState ({ stateVector }) {
    return toBase64(Y.encodeStateAsUpdate(doc, stateVector ? fromBase64(stateVector) : undefined))
  },
  applyUpdate ({ update }) { Y.applyUpdate(doc, fromBase64(update), 'test'); return null },
  sendRaw ({ data }) {
    const ws = requireProvider().ws
    if (ws === null || ws.readyState !== WebSocket.OPEN) throw new Error('socket not open')
    ws.send(fromBase64(data))
    return null
  },
  disconnect () { requireProvider().disconnect(); return null },
  reconnect () { requireProvider().connect(); return null },
  async exit () {
    setImmediate(shutdown)
    return null
  }
}

let shuttingDown = false
async function shutdown () {
  if (shuttingDown) return
  shuttingDown = true
  const ws = provider?.ws ?? null
  if (provider !== null) provider.destroy()
  awareness.destroy()
  // give the close frame a moment to leave, then go regardless
  if (ws !== null && ws.readyState !== WebSocket.CLOSED) {
    await new Promise((resolve) => { ws.once('close', resolve); setTimeout(resolve, 300) })
  }
  process.exit(0)
}

const handleLine = async (line) => {
  if (line.trim() === '') return
  let request
  try {
    request = JSON.parse(line)
  } catch (err) {
    emit('error', { message: `bad JSON on stdin: ${err.message}` })
    return
  }
  const { id, cmd, ...args } = request
  try {
    const handler = Object.hasOwn(commands, cmd) ? commands[cmd] : null
    if (handler === null) throw new Error(`unknown command ${JSON.stringify(cmd)}`)
    const result = await handler(args)
    send({ id, result: result ?? null })
  } catch (err) {
    send({ id, error: err instanceof Error ? err.message : String(err) })
  }
}

process.on('uncaughtException', (err) => emit('error', { message: `uncaught: ${err?.stack ?? err}` }))
process.on('unhandledRejection', (err) => emit('error', { message: `unhandled rejection: ${err?.stack ?? err}` }))

const input = createInterface({ input: process.stdin, crlfDelay: Infinity })
input.on('line', (line) => { handleLine(line) })
// the test process went away: never outlive it
input.on('close', shutdown)
emit('ready', { clientId: doc.clientID })
