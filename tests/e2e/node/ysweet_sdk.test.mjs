// Jamsocket's own y-sweet packages against a served Lens Relay: @y-sweet/sdk's DocumentManager (every
// method) and @y-sweet/client's YSweetProvider through the documented auth-endpoint pattern.
// Run by tests/e2e/test_ysweet_sdk.py with `node --test`; the server and its tokens come from the env:
//   RELAY_URL (http://127.0.0.1:PORT), EDIT_TOKEN, VIEW_TOKEN, ALPHA_TOKEN (edit, folder Alpha only),
//   ALPHA_DOC (a note in Alpha), BETA_DOC (a note in Beta), FILE_DOC (a file document in Alpha).

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { createHash, randomUUID } from 'node:crypto'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { DocumentManager, YSweetError } from '@y-sweet/sdk'
import { YSweetProvider } from '@y-sweet/client'

const env = (name) => {
  const value = process.env[name]
  if (!value) throw new Error(`${name} is not set`)
  return value
}
const RELAY_URL = env('RELAY_URL')
const host = new URL(RELAY_URL).host
const connectionString = (token) => `ys://${encodeURIComponent(token)}@${host}`
const manager = new DocumentManager(connectionString(env('EDIT_TOKEN')))
const TIMEOUT = 10000

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
async function until (what, check, timeout = TIMEOUT) {
  const deadline = Date.now() + timeout
  for (;;) {
    if (await check()) return
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

const docOf = (update) => {
  const doc = new Y.Doc()
  Y.applyUpdate(doc, update)
  return doc
}

function provide (docId, authEndpoint, extra = {}) {
  const doc = new Y.Doc()
  const closes = []
  const provider = new YSweetProvider(authEndpoint, docId, doc, {
    WebSocketPolyfill: WebSocket, showDebuggerLink: false, ...extra
  })
  provider.on('connection-close', (event) => closes.push({ code: event?.code, reason: String(event?.reason ?? '') }))
  return { doc, provider, closes, connected: () => until(`${docId} connected`, () => provider.status === 'connected') }
}

// The provider's connect loop only ends once connected or offline, and a socket closing after
// disconnect() sets it going again: park the loop for good, silence the socket, then go.
function stop (...provided) {
  for (const { provider } of provided) {
    provider.attemptToConnect = () => new Promise(() => {})
    provider.connect = async () => {}
    if (provider.websocket) {
      provider.websocket.onclose = provider.websocket.onerror = provider.websocket.onmessage = null
    }
    provider.disconnect()
    provider.destroy()
    provider.awareness.destroy() // its 3 s check interval would keep Node running
  }
}

// The documented pattern: the app's own route calls getOrCreateDocAndToken and hands the token over.
async function authEndpointServer (serverManager, request = {}) {
  const server = createServer(async (req, res) => {
    let body = ''
    for await (const chunk of req) body += chunk
    try {
      const { docId } = JSON.parse(body)
      const token = await serverManager.getOrCreateDocAndToken(docId, request)
      res.writeHead(200, { 'Content-Type': 'application/json' })
      res.end(JSON.stringify(token))
    } catch (error) {
      res.writeHead(500)
      res.end(String(error))
    }
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${server.address().port}/auth`, close: () => server.close() }
}

test('checkStore answers ok, with ys:// and http:// connection strings', async () => {
  assert.deepEqual(await manager.checkStore(), { ok: true })
  const plain = new DocumentManager(`http://${encodeURIComponent(env('EDIT_TOKEN'))}@${host}`)
  assert.deepEqual(await plain.checkStore(), { ok: true })
})

test('createDoc makes a document with a fresh id, or with the given one, and again is a no-op', async () => {
  const fresh = await manager.createDoc()
  assert.match(fresh.docId, /^[A-Za-z0-9_.-]{1,100}$/)
  const named = `sdk-${randomUUID()}`
  assert.deepEqual(await manager.createDoc(named), { docId: named })
  assert.deepEqual(await manager.createDoc(named), { docId: named })
})

test('getClientToken names the socket and the HTTP base of the document', async () => {
  const { docId } = await manager.createDoc()
  const token = await manager.getClientToken(docId)
  assert.equal(token.docId, docId)
  assert.equal(token.url, `ws://${host}/d/${docId}/ws`)
  assert.equal(token.baseUrl, `http://${host}/d/${docId}`)
  assert.equal(token.authorization, 'full')
  assert.match(token.token, /^lrc_/)
  const readOnly = await manager.getClientToken({ docId }, { authorization: 'read-only', validForSeconds: 60 })
  assert.equal(readOnly.authorization, 'read-only')
})

test('getOrCreateDocAndToken creates the document it names', async () => {
  const docId = `sdk-${randomUUID()}`
  const token = await manager.getOrCreateDocAndToken(docId)
  assert.equal(token.docId, docId)
  const update = await manager.getDocAsUpdate(docId)
  assert.ok(update instanceof Uint8Array)
})

test('updateDoc then getDocAsUpdate round-trips text and maps', async () => {
  const { docId } = await manager.createDoc()
  const source = new Y.Doc()
  source.getText('contents').insert(0, 'Hello from the SDK ✓')
  source.getMap('meta').set('answer', 42)
  await manager.updateDoc(docId, Y.encodeStateAsUpdate(source))
  const copy = docOf(await manager.getDocAsUpdate(docId))
  assert.equal(copy.getText('contents').toString(), 'Hello from the SDK ✓')
  assert.equal(copy.getMap('meta').get('answer'), 42)
})

test('createDocWithContent makes a document holding the update', async () => {
  const source = new Y.Doc()
  source.getText('contents').insert(0, 'born with content')
  const { docId } = await manager.createDocWithContent(Y.encodeStateAsUpdate(source))
  assert.equal(docOf(await manager.getDocAsUpdate(docId)).getText('contents').toString(), 'born with content')
})

test('getDocConnection reads and writes with the client token alone', async () => {
  const { docId } = await manager.createDoc()
  const connection = await manager.getDocConnection(docId)
  const source = new Y.Doc()
  source.getText('contents').insert(0, 'via the doc connection')
  await connection.updateDoc(Y.encodeStateAsUpdate(source))
  assert.equal(docOf(await connection.getAsUpdate()).getText('contents').toString(), 'via the doc connection')
  const readOnly = await manager.getDocConnection(docId, { authorization: 'read-only' })
  await assert.rejects(readOnly.updateDoc(Y.encodeStateAsUpdate(new Y.Doc())), (error) => {
    assert.ok(error instanceof YSweetError)
    assert.equal(error.cause.status, 403)
    return true
  })
})

test('a folder token mints for its folder only; a view token cannot ask for full', async () => {
  const alpha = new DocumentManager(connectionString(env('ALPHA_TOKEN')))
  const token = await alpha.getClientToken(env('ALPHA_DOC'))
  assert.equal(token.authorization, 'full')
  await assert.rejects(alpha.getClientToken(env('BETA_DOC')), (error) => error.cause?.status === 404)
  // the documented pattern for a folder token: its own note exists, so "create" is a no-op ...
  assert.equal((await alpha.getOrCreateDocAndToken(env('ALPHA_DOC'))).docId, env('ALPHA_DOC'))
  // ... while another folder's note is refused exactly like an id nobody has used (it may not create either)
  const refusedStatus = async (docId) => {
    try { await alpha.getOrCreateDocAndToken(docId) } catch (error) { return error.cause?.status }
    return 200
  }
  assert.equal(await refusedStatus(env('BETA_DOC')), 403)
  assert.equal(await refusedStatus(`never-used-${randomUUID()}`), 403)
  const viewer = new DocumentManager(connectionString(env('VIEW_TOKEN')))
  assert.equal((await viewer.getClientToken(env('ALPHA_DOC'))).authorization, 'read-only')
  await assert.rejects(viewer.getClientToken(env('ALPHA_DOC'), { authorization: 'full' }),
    (error) => error.cause?.status === 403)
  const stranger = new DocumentManager(connectionString('lr_not-a-token'))
  await assert.rejects(stranger.checkStore(), (error) => error.cause?.code === 'InvalidAuthProvided')
})

test('two providers through an auth endpoint share text, maps and awareness', async () => {
  const endpoint = await authEndpointServer(manager)
  const docId = `sdk-${randomUUID()}`
  const a = provide(docId, endpoint.url)
  const b = provide(docId, endpoint.url)
  try {
    await Promise.all([a.connected(), b.connected()])
    a.doc.getText('contents').insert(0, 'from A')
    b.doc.getMap('meta').set('from', 'B')
    await until('text at B', () => b.doc.getText('contents').toString() === 'from A')
    await until('map at A', () => a.doc.getMap('meta').get('from') === 'B')
    a.provider.awareness.setLocalStateField('user', { name: 'Ada' })
    await until('presence at B', () =>
      [...b.provider.awareness.getStates().values()].some((state) => state.user?.name === 'Ada'))
    await until('A acknowledged', () => !a.provider.hasLocalChanges)
    const stored = docOf(await manager.getDocAsUpdate(docId))
    assert.equal(stored.getText('contents').toString(), 'from A')
    assert.equal(stored.getMap('meta').get('from'), 'B')
  } finally {
    stop(a, b); endpoint.close()
  }
})

test("a read-only client token's edits reach nobody", async () => {
  const docId = `sdk-${randomUUID()}`
  const writerEndpoint = await authEndpointServer(manager)
  const readerEndpoint = await authEndpointServer(manager, { authorization: 'read-only' })
  const writer = provide(docId, writerEndpoint.url)
  const reader = provide(docId, readerEndpoint.url)
  try {
    await Promise.all([writer.connected(), reader.connected()])
    assert.equal(reader.provider.clientToken.authorization, 'read-only')
    writer.doc.getText('contents').insert(0, 'written')
    await until('the reader sees the writer', () => reader.doc.getText('contents').toString() === 'written')
    reader.doc.getText('contents').insert(0, 'forbidden ')
    writer.doc.getText('contents').insert(7, '!')
    await until('the reader sees the later edit', () => reader.doc.getText('contents').toString().endsWith('written!'))
    await sleep(300)
    assert.equal(writer.doc.getText('contents').toString(), 'written!')
    assert.equal(docOf(await manager.getDocAsUpdate(docId)).getText('contents').toString(), 'written!')
  } finally {
    stop(writer, reader); writerEndpoint.close(); readerEndpoint.close()
  }
})

test('an expired client token is refused with 4401 and a reason', async () => {
  const { docId } = await manager.createDoc()
  const expired = await manager.getClientToken(docId, { validForSeconds: 1 })
  await sleep(1500)
  const connection = await manager.getDocConnection(docId, { validForSeconds: 1 })
  await sleep(1500)
  await assert.rejects(connection.getAsUpdate(), (error) => error.cause?.code === 'InvalidAuthProvided')
  // The provider keeps the token it was given, and its auth endpoint hands out the same stale one.
  const p = provide(docId, async () => expired, { initialClientToken: expired })
  try {
    await until('the refusal', () => p.closes.length > 0)
    assert.equal(p.closes[0].code, 4401)
    assert.match(p.closes[0].reason, /expired/)
    assert.notEqual(p.provider.status, 'connected')
  } finally {
    stop(p)
  }
})

test('files: upload and download through the upload and download URLs with a client token', async () => {
  const docId = env('FILE_DOC')
  const alpha = new DocumentManager(connectionString(env('ALPHA_TOKEN')))
  const { token, baseUrl } = await alpha.getClientToken(docId)
  const origin = new URL(baseUrl).origin
  const bytes = new TextEncoder().encode(`a file ${randomUUID()}\n`)
  const hash = createHash('sha256').update(bytes).digest('hex')
  const auth = { Authorization: `Bearer ${token}` }
  const asked = await fetch(`${origin}/f/${docId}/upload-url?hash=${hash}&content_type=text/plain&content_length=${bytes.length}`,
    { method: 'POST', headers: auth })
  assert.equal(asked.status, 200, await asked.clone().text())
  const { uploadUrl } = await asked.json()
  const form = new FormData()
  form.append('file', new Blob([bytes], { type: 'text/plain' }), 'note.txt')
  const uploaded = await fetch(new URL(uploadUrl, origin), { method: 'POST', body: form, headers: auth })
  assert.ok(uploaded.ok, `${uploaded.status} ${await uploaded.text()}`)
  const where = await fetch(`${origin}/f/${docId}/download-url?hash=${hash}`, { headers: auth })
  assert.equal(where.status, 200)
  const { downloadUrl } = await where.json()
  const downloaded = await fetch(new URL(downloadUrl, origin), { headers: auth })
  assert.equal(downloaded.status, 200)
  assert.deepEqual(new Uint8Array(await downloaded.arrayBuffer()), bytes)
  // The same client token opens no other document's files.
  const other = await fetch(`${origin}/f/${env('ALPHA_DOC')}/download-url?hash=${hash}`, { headers: auth })
  assert.equal(other.status, 401)
})
