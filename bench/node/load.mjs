#!/usr/bin/env node
// A bounded load: many y-websocket clients over many documents, each typing a marker now and then for a
// fixed time, spread over the given servers (client k of a document connects to serverUrls[k % n]).
// Each marker carries its send time, so every client measures delivery latency on arrival.
//
// Argument: one JSON object {targetsFile, clientsPerDoc, seconds, intervalMs}: targetsFile names a JSON
// list of {room, serverUrls, params}. Prints one JSON line with sent, delivered, expected deliveries,
// p50/p99 latency (ms), connection errors and how many documents converged.

import { readFileSync } from 'node:fs'
import { connectClient, percentile, readArgs, runMain, sleep, waitUntil } from './deps.mjs'

const MARK = /⟨(\d+)\.(\d+)\.(\d+\.\d+)⟩/g

const main = async () => {
  const { targetsFile, clientsPerDoc = 4, seconds = 60, intervalMs = 2000 } = readArgs()
  const targets = JSON.parse(readFileSync(targetsFile, 'utf8'))
  const docs = targets.map((target) => ({ target, clients: [] }))
  let id = 0
  for (const doc of docs) {
    for (let k = 0; k < clientsPerDoc; k++) {
      const serverUrl = doc.target.serverUrls[k % doc.target.serverUrls.length]
      const client = connectClient({ serverUrl, room: doc.target.room, params: doc.target.params })
      client.id = id++
      client.sent = 0
      doc.clients.push(client)
    }
  }
  const all = docs.flatMap((doc) => doc.clients)
  await waitUntil(() => all.every((c) => c.synced || c.closed), 120000, 'every client to sync', 20)
  const latencies = []
  const start = performance.timeOrigin + performance.now()
  for (const client of all) {
    client.text.observe((event, tr) => {
      if (tr.local) return
      const now = performance.timeOrigin + performance.now()
      for (const op of event.delta) {
        if (typeof op.insert !== 'string') continue
        for (const m of op.insert.matchAll(MARK)) {
          const sentAt = Number(m[3])
          if (sentAt >= start) latencies.push(now - sentAt)
        }
      }
    })
  }
  const deadline = performance.now() + seconds * 1000
  await Promise.all(all.map(async (client) => {
    await sleep(Math.random() * intervalMs)
    while (performance.now() < deadline && !client.closed) {
      const stamp = (performance.timeOrigin + performance.now()).toFixed(3)
      client.text.insert(0, `⟨${client.id}.${client.sent}.${stamp}⟩`)
      client.sent++
      await sleep(intervalMs * (0.5 + Math.random()))
    }
  }))
  const sentPerDoc = docs.map((doc) => doc.clients.reduce((n, c) => n + c.sent, 0))
  const converged = () => docs.filter((doc, i) => {
    const texts = doc.clients.map((c) => c.text.toString())
    return texts.every((t) => t === texts[0]) && [...texts[0].matchAll(MARK)].length >= sentPerDoc[i]
  }).length
  const settleStart = performance.now()
  try { await waitUntil(() => converged() === docs.length, 30000, 'convergence', 100) } catch {}
  const sorted = latencies.sort((a, b) => a - b)
  const result = {
    clients: all.length,
    documents: docs.length,
    sent: sentPerDoc.reduce((a, b) => a + b, 0),
    delivered: sorted.length,
    expected: docs.reduce((n, doc, i) => n + sentPerDoc[i] * (doc.clients.length - 1), 0),
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    errors: all.filter((c) => c.closed).length,
    converged: converged(),
    settleMs: performance.now() - settleStart
  }
  for (const client of all) client.provider.destroy()
  return result
}

runMain(main)
