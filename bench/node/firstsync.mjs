#!/usr/bin/env node
// Time to first sync: connect fresh y-websocket clients one after another and time each from the provider's
// creation (TCP + WebSocket handshake included) until it has synced and holds the whole text.
//
// Argument: one JSON object {steps: [{label, serverUrl, room, params, expectLength, fill?, time?}]}
//   fill: text this client writes into the (empty) document before the next step, e.g. a reference room;
//         such a client stays connected so the room stays alive
//   time: false to leave the step out of the result (a filler)
// Output: {timings: [{label, ms}]}

import { connectClient, readArgs, runMain, sleep, waitUntil } from './deps.mjs'

const main = async () => {
  const { steps } = readArgs()
  const timings = []
  const clients = []
  for (const step of steps) {
    const start = performance.now()
    const client = connectClient(step)
    clients.push(client)
    await waitUntil(
      () => client.closed || (client.synced && (step.fill || client.text.length === step.expectLength)),
      60000,
      `${step.label} to sync`,
      0.5
    )
    if (client.closed) throw new Error(`${step.label}: refused (${client.closed})`)
    const ms = performance.now() - start
    if (step.fill) {
      if (client.text.length === 0) client.text.insert(0, step.fill)
      await waitUntil(() => client.provider.ws.bufferedAmount === 0, 10000, 'the fill to be sent')
      await sleep(200)
    }
    if (step.time !== false) timings.push({ label: step.label, ms, length: client.text.length })
  }
  for (const client of clients) client.provider.destroy()
  return { timings }
}

runMain(main)
