#!/usr/bin/env node
// Fan-out benchmark: C y-websocket clients on one document, all in this one Node process so a single
// performance.now() clock times every delivery. Client 0 (the writer) appends U one-character updates; each
// other client records, per update, the time from the writer's local insert to its own observe.
//
// Argument: one JSON object
//   serverUrl, room, params   where the clients connect (params: URL query, e.g. {token})
//   clients                   C, writer included (>= 2)
//   updates                   U
//   rate                      0: as fast as the client allows, one insert per event-loop turn (setImmediate),
//                             so incoming frames are processed between inserts; R > 0: R inserts per second
//   seed                      text the document should start with (written by the writer if the doc is empty),
//                             so a fresh reference room and an imported document start alike
//   timeoutMs                 give up waiting for deliveries after this long
//   serverPid, clkTck         optional: read the server's CPU time (/proc/PID/stat) over the measured window
//                             only, leaving out connection set-up
// Output: one JSON line (see `result` below).

import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import {
  connectClient, nextMacrotask, percentile, readArgs, runMain, sleep, waitUntil
} from './deps.mjs'

/** User + system CPU seconds of a process (all threads), or null if it cannot be read. */
const cpuSeconds = (pid, clkTck) => {
  if (!pid) return null
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop().split(' ')
    return (Number(fields[11]) + Number(fields[12])) / clkTck
  } catch {
    return null
  }
}

const main = async () => {
  const args = readArgs()
  const { serverUrl, room, params, clients: clientCount, updates, rate = 0, seed = '', timeoutMs = 120000 } = args
  const { serverPid = 0, clkTck = 100 } = args
  if (clientCount < 2) throw new Error('need a writer and at least one receiver')

  const clients = []
  for (let c = 0; c < clientCount; c++) clients.push(connectClient({ serverUrl, room, params }))
  await waitUntil(
    () => clients.every((cl) => cl.synced || cl.closed),
    30000,
    'every client to sync'
  )
  const refused = clients.find((cl) => cl.closed)
  if (refused) throw new Error(`a client was refused: ${refused.closed}`)

  const [writer, ...receivers] = clients
  if (writer.text.length === 0 && seed) writer.text.insert(0, seed)
  const base = writer.text.length
  await waitUntil(() => receivers.every((r) => r.text.length === base), 30000, 'the seed to reach everyone')
  // Let the connect-time awareness traffic die down so it does not overlap the measurement.
  await sleep(200)

  const sentAt = new Float64Array(updates)
  const latencies = new Float64Array(updates * receivers.length)
  let latencyCount = 0
  const seen = new Array(receivers.length).fill(0)
  let lastDelivery = 0
  let frames = 0
  receivers.forEach((receiver, r) => {
    receiver.text.observe((event) => {
      if (event.transaction.local) return
      const now = performance.now()
      frames++
      // The writer only appends, so the text length says how many of its updates have been integrated.
      const integrated = Math.min(updates, receiver.text.length - base)
      while (seen[r] < integrated) {
        latencies[latencyCount++] = now - sentAt[seen[r]]
        seen[r]++
      }
      lastDelivery = now
    })
  })

  const cpuBefore = cpuSeconds(serverPid, clkTck)
  const start = performance.now()
  for (let i = 0; i < updates; i++) {
    if (rate > 0) {
      const due = start + (i * 1000) / rate
      const wait = due - performance.now()
      if (wait > 1) await sleep(wait)
      else await nextMacrotask()
    }
    sentAt[i] = performance.now()
    writer.text.insert(writer.text.length, String.fromCharCode(97 + (i % 26)))
    if (rate === 0) await nextMacrotask()
  }
  const writeDone = performance.now()
  const expected = updates * receivers.length
  let timedOut = false
  try {
    await waitUntil(() => latencyCount >= expected, timeoutMs, 'every delivery', 1)
  } catch {
    timedOut = true
  }
  const elapsed = (lastDelivery || performance.now()) - start
  const cpuAfter = cpuSeconds(serverPid, clkTck)

  // Convergence: the server may only merge, never lose. Give stragglers a moment before judging.
  await sleep(300)
  const finalText = writer.text.toString()
  const diverged = receivers.filter((r) => r.text.toString() !== finalText).length
  const sorted = Array.from(latencies.subarray(0, latencyCount)).sort((a, b) => a - b)
  for (const client of clients) client.provider.destroy()

  return {
    clients: clientCount,
    receivers: receivers.length,
    updates,
    rate,
    expected_deliveries: expected,
    deliveries: latencyCount,
    lost: expected - latencyCount,
    timed_out: timedOut,
    elapsed_ms: elapsed,
    write_ms: writeDone - start,
    deliveries_per_s: latencyCount / (elapsed / 1000),
    frames_observed: frames,
    server_cpu_s: cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore,
    latency_ms: {
      p50: percentile(sorted, 50),
      p90: percentile(sorted, 90),
      p99: percentile(sorted, 99),
      max: sorted.length ? sorted[sorted.length - 1] : null
    },
    converged: diverged === 0 && finalText.length === base + updates,
    diverged_clients: diverged,
    final_length: finalText.length,
    final_sha256: createHash('sha256').update(finalText, 'utf8').digest('hex')
  }
}

runMain(main)
