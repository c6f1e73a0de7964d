#!/usr/bin/env node
// Suggestion round trips seen by live y-websocket clients: C clients on one document (one process, one
// clock), then N sequential steps, each timed from the request to the moment each client's Y.Text holds
// the expected text.
//
// mode "mcp": an assistant's `edit` over MCP (plain fetch, one session, read first) until the clients see
//   the CriticMarkup; then an editor's Accept in the admin (signed in with a password, CSRF token, the
//   decide view's POST) until the clients hold the settled text, exactly.
// mode "direct": the floor for the same changes: one more y-websocket client (the writer) makes them
//   itself, the markup as two inserts around the old word, the accept as two deletes.
//
// Argument: one JSON object {mode, target: {serverUrl, room, params}, clients, text, edits: [{old, new}],
//   fill?, stepTimeoutMs?, mcp?: {url, token, filePath}, admin?: {base, username, password}}
// Prints one JSON line: per step {markup: {request, response, observer, all}, settle: {...}} in ms.

import { connectClient, readArgs, runMain, waitUntil } from './deps.mjs'

// -- MCP over fetch ------------------------------------------------------------------------------------

const rpcMessages = async (response) => {
  const body = await response.text()
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    return body.replace(/\r\n/g, '\n').split('\n\n')
      .map((block) => block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n'))
      .filter((data) => data)
      .map((data) => JSON.parse(data))
  }
  const parsed = JSON.parse(body)
  return Array.isArray(parsed) ? parsed : [parsed]
}

const mcpSession = async ({ url, token }) => {
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    Authorization: `Bearer ${token}`
  }
  const init = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench-review', version: '1.0' } }
    })
  })
  if (init.status !== 200) throw new Error(`initialize: HTTP ${init.status} ${await init.text()}`)
  await init.text()
  headers['Mcp-Session-Id'] = init.headers.get('mcp-session-id')
  headers['MCP-Protocol-Version'] = '2025-11-25'
  const notified = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })
  if (notified.status !== 202) throw new Error(`notifications/initialized: HTTP ${notified.status}`)
  let nextId = 0
  return async (name, args) => {
    nextId += 1
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: nextId, method: 'tools/call', params: { name, arguments: args } })
    })
    if (response.status !== 200) throw new Error(`${name}: HTTP ${response.status} ${await response.text()}`)
    const reply = (await rpcMessages(response)).find((m) => m.id === nextId)
    if (!reply || reply.error) throw new Error(`${name}: ${JSON.stringify(reply?.error ?? 'no reply')}`)
    const text = reply.result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n')
    if (reply.result.isError) throw new Error(`${name} failed: ${text}`)
    return text
  }
}

// -- the admin, as a signed-in editor without a browser --------------------------------------------------

const adminSession = async ({ base, username, password }) => {
  const jar = new Map()
  const keep = (response) => {
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';')
      const at = pair.indexOf('=')
      jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim())
    }
  }
  const cookieHeader = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ')
  const get = async (path) => {
    const response = await fetch(base + path, { headers: { Cookie: cookieHeader() }, redirect: 'manual' })
    keep(response)
    return { status: response.status, text: await response.text() }
  }
  const post = async (path, fields) => {
    const body = new URLSearchParams({ csrfmiddlewaretoken: jar.get('csrftoken') ?? '', ...fields })
    const response = await fetch(base + path, {
      method: 'POST',
      headers: { Cookie: cookieHeader(), 'Content-Type': 'application/x-www-form-urlencoded', Referer: base + path },
      body,
      redirect: 'manual'
    })
    keep(response)
    await response.arrayBuffer()
    return response.status
  }
  await get('/admin/login/?next=/admin/')
  const status = await post('/admin/login/?next=/admin/', { username, password, next: '/admin/' })
  if (status !== 302 || !jar.has('sessionid')) throw new Error(`admin login failed: HTTP ${status}`)
  return {
    async suggestionPk (uid) {
      const page = await get(`/admin/suggestions/suggestion/?q=${encodeURIComponent(uid)}`)
      const found = [...new Set([...page.text.matchAll(/\/admin\/suggestions\/suggestion\/(\d+)\/change\//g)].map((m) => m[1]))]
      if (found.length !== 1) throw new Error(`changelist search for ${uid} found ${found.length} suggestions`)
      return found[0]
    },
    async decide (pk, decision) {
      const status = await post(`/admin/suggestions/suggestion/${pk}/decide/`, { decision, note: '' })
      if (status !== 302) throw new Error(`decide ${pk}: HTTP ${status}`)
    }
  }
}

// -- observing ----------------------------------------------------------------------------------------

/** Resolves with, per client, the time its text first satisfied `predicate` (checked on every change). */
const watchAll = (clients, predicate, timeoutMs, what) => {
  const seenAt = clients.map(() => null)
  let remaining = clients.length
  let finish
  const done = new Promise((resolve, reject) => {
    finish = resolve
    setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; ` +
      `${remaining} clients still waiting, e.g. ${JSON.stringify(clients[seenAt.indexOf(null)]?.text.toString().slice(0, 400))}`)), timeoutMs)
  })
  const check = (index) => {
    if (seenAt[index] !== null) return
    if (predicate(clients[index].text.toString())) {
      seenAt[index] = performance.now()
      remaining -= 1
      if (remaining === 0) finish(seenAt)
    }
  }
  const observers = clients.map((client, index) => {
    const observer = () => check(index)
    client.text.observe(observer)
    return observer
  })
  clients.forEach((_, index) => check(index))
  return done.finally(() => clients.forEach((client, index) => client.text.unobserve(observers[index])))
}

const timing = (started, response, seenAt) => ({
  response: response === null ? null : response - started,
  observer: seenAt[0] - started,
  all: Math.max(...seenAt) - started
})

// -- the writer of the "direct" mode -------------------------------------------------------------------

const insertMarkup = (writer, oldWord, newWord) => {
  const text = writer.text.toString()
  const at = text.indexOf(oldWord)
  if (at < 0) throw new Error(`${oldWord} not in the writer's text`)
  writer.doc.transact(() => {
    writer.text.insert(at + oldWord.length, `--}{++${newWord}++}`)
    writer.text.insert(at, '{--')
  })
}

const acceptMarkup = (writer, oldWord, newWord) => {
  const text = writer.text.toString()
  const opening = `{--${oldWord}--}{++`
  const at = text.indexOf(opening)
  if (at < 0) throw new Error(`markup for ${oldWord} not in the writer's text`)
  writer.doc.transact(() => {
    writer.text.delete(at + opening.length + newWord.length, 3) // "++}"
    writer.text.delete(at, opening.length)
  })
}

// -- main -----------------------------------------------------------------------------------------------

const main = async () => {
  const args = readArgs()
  const { mode, target, text, edits } = args
  const stepTimeoutMs = args.stepTimeoutMs ?? 15000
  const clients = Array.from({ length: args.clients }, () => connectClient(target))
  const writer = mode === 'direct' ? connectClient(target) : null
  const everyone = writer ? [...clients, writer] : clients
  await waitUntil(() => everyone.every((c) => c.synced || c.closed), 30000, 'every client to sync')
  const refused = everyone.find((c) => c.closed)
  if (refused) throw new Error(`a client was refused: ${refused.closed}`)
  if (args.fill && writer.text.length === 0) writer.text.insert(0, text)
  await watchAll(clients, (t) => t === text, 30000, 'every client to hold the initial text')

  let callTool = null
  let admin = null
  if (mode === 'mcp') {
    callTool = await mcpSession(args.mcp)
    await callTool('read', { file_path: args.mcp.filePath }) // read before edit
    admin = await adminSession(args.admin)
  }

  const steps = []
  let expected = text
  for (const { old: oldWord, new: newWord } of edits) {
    // Markup: the new word appears (only ever inside the suggestion) while the old one is still there.
    const markupSeen = (t) => t.includes(newWord) && t.includes(oldWord)
    let started = performance.now()
    let watching = watchAll(clients, markupSeen, stepTimeoutMs, `the markup of ${oldWord} -> ${newWord}`)
    let response = null
    let uid = null
    if (mode === 'mcp') {
      const reply = await callTool('edit', { file_path: args.mcp.filePath, old_string: oldWord, new_string: newWord })
      response = performance.now()
      uid = reply.match(/suggestion (\S+), pending/)?.[1]
      if (!uid) throw new Error(`no suggestion id in ${reply}`)
    } else {
      insertMarkup(writer, oldWord, newWord)
    }
    const markup = timing(started, response, await watching)

    // Settled: exactly the text with this word replaced, no markup left.
    expected = expected.replace(oldWord, newWord)
    const settledText = expected
    const pk = mode === 'mcp' ? await admin.suggestionPk(uid) : null // an editor finds it first: not timed
    started = performance.now()
    watching = watchAll(clients, (t) => t === settledText, stepTimeoutMs, `the settled text after accepting ${newWord}`)
    response = null
    if (mode === 'mcp') {
      await admin.decide(pk, 'accept')
      response = performance.now()
    } else {
      acceptMarkup(writer, oldWord, newWord)
    }
    const settle = timing(started, response, await watching)
    steps.push({ markup, settle })
  }
  for (const client of everyone) client.provider.destroy()
  return { steps, finalText: expected }
}

runMain(main)
