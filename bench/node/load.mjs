#!/usr/bin/env node
// A bounded load: many y-websocket clients over many documents, each typing a marker now and then for a
// fixed time, spread over the given servers (client k of a document connects to serverUrls[k % n]).
// Each marker carries its send time, so every client measures delivery latency on arrival.
//
// Argument: one JSON object {targetsFile, clientsPerDoc, seconds, intervalMs, writersPerDoc?, serverPids?,
// clkTck?}: targetsFile names a JSON list of {room, serverUrls, params}; only the first writersPerDoc
// clients of a document type (all by default); serverPids lists processes whose CPU time over the typing
// window is reported. Prints one JSON line with sent, delivered, expected deliveries, p50/p99/max latency (ms),
// connection errors, how many documents converged, server_cpu_s and the kernel's part of it, server_system_s,
// and connectMs (every client connected and synced, before the typing).

import { readFileSync } from 'node:fs'
import { connectClient, percentile, readArgs, runMain, sleep, waitUntil } from './deps.mjs'

const MARK = /⟨(\d+)\.(\d+)\.(\d+\.\d+)⟩/g

// User and system (kernel) CPU seconds of the processes, all threads: the kernel's share is mostly the
// sockets' sends and receives, which any server pays; the user share is the server's own code.
const cpuSeconds = (pids, clkTck) => {
  let user = 0
  let system = 0
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop().split(' ')
      user += Number(fields[11]) / clkTck
      system += Number(fields[12]) / clkTck
    } catch { return null }
  }
  return { user, system }
}

const main = async () => {
  const { targetsFile, clientsPerDoc = 4, seconds = 60, intervalMs = 2000, serverPids = [], clkTck = 100 } = readArgs()
  const writersPerDoc = readArgs().writersPerDoc ?? clientsPerDoc
  const targets = JSON.parse(readFileSync(targetsFile, 'utf8'))
  const docs = targets.map((target) => ({ target, clients: [] }))
  const connectStart = performance.now()
  let id = 0
  for (const doc of docs) {
    for (let k = 0; k < clientsPerDoc; k++) {
      const serverUrl = doc.target.serverUrls[k % doc.target.serverUrls.length]
      const client = connectClient({ serverUrl, room: doc.target.room, params: doc.target.params })
      client.id = id++
      client.sent = 0
      client.writes = k < writersPerDoc
      doc.clients.push(client)
    }
  }
  const all = docs.flatMap((doc) => doc.clients)
  // Thousands of clients connecting at once take a while on a small machine: 100 ms each at most.
  await waitUntil(() => all.every((c) => c.synced || c.closed), Math.max(120000, 100 * all.length), 'every client to sync', 20)
  const connectMs = performance.now() - connectStart
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
  const cpuBefore = cpuSeconds(serverPids, clkTck)
  await Promise.all(all.filter((client) => client.writes).map(async (client) => {
    await sleep(Math.random() * intervalMs)
    while (performance.now() < deadline && !client.closed) {
      const stamp = (performance.timeOrigin + performance.now()).toFixed(3)
      client.text.insert(0, `⟨${client.id}.${client.sent}.${stamp}⟩`)
      client.sent++
      await sleep(intervalMs * (0.5 + Math.random()))
    }
  }))
  const cpuAfter = cpuSeconds(serverPids, clkTck)
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
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1] : null,
    errors: all.filter((c) => c.closed).length,
    converged: converged(),
    settleMs: performance.now() - settleStart,
    // From the first client's connection to the last one's first sync: loading every document.
    connectMs,
    server_cpu_s: cpuBefore === null || cpuAfter === null ? null : cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system,
    // Wall-clock epoch milliseconds of the typing window, to find it in the servers' logs.
    typing_from_ms: performance.timeOrigin + deadline - seconds * 1000,
    typing_to_ms: performance.timeOrigin + deadline,
    server_system_s: cpuBefore === null || cpuAfter === null ? null : cpuAfter.system - cpuBefore.system
  }
  for (const client of all) client.provider.destroy()
  return result
}

runMain(main)
