#!/usr/bin/env node
// Hold one synced y-websocket client on each of many documents, so the server keeps them all loaded while
// the benchmark reads its memory. Documents given a `text` are filled with it if they arrive empty (the
// reference server starts every room empty); the others must already hold `expectLength` characters.
//
// Argument: one JSON object {targetsFile, batch}: targetsFile names a JSON list of
//   {serverUrl, room, params, text?, expectLength}
// Prints {"ready": ...} once every client is synced and filled, then waits; when stdin closes it disconnects
// everyone and exits.

import { readFileSync } from 'node:fs'
import { connectClient, readArgs, sleep, waitUntil } from './deps.mjs'

const main = async () => {
  const { targetsFile, batch = 50 } = readArgs()
  const targets = JSON.parse(readFileSync(targetsFile, 'utf8'))
  const clients = []
  const started = performance.now()
  for (let i = 0; i < targets.length; i += batch) {
    const group = targets.slice(i, i + batch).map((target) => ({ target, client: connectClient(target) }))
    await waitUntil(() => group.every(({ client }) => client.synced || client.closed), 60000, 'a batch to sync')
    for (const { target, client } of group) {
      if (client.closed) throw new Error(`refused: ${client.closed} (${target.room})`)
      if (target.text && client.text.length === 0) client.text.insert(0, target.text)
      clients.push({ target, client })
    }
  }
  await waitUntil(
    () => clients.every(({ client }) => client.provider.ws && client.provider.ws.bufferedAmount === 0),
    60000,
    'every fill to be sent'
  )
  await sleep(500)
  const wrong = clients.filter(({ target, client }) => client.text.length !== target.expectLength)
  if (wrong.length) {
    throw new Error(`${wrong.length} documents have the wrong length, e.g. ${wrong[0].target.room}: ` +
      `${wrong[0].client.text.length} != ${wrong[0].target.expectLength}`)
  }
  process.stdout.write(JSON.stringify({ ready: true, clients: clients.length, ms: performance.now() - started }) + '\n')
  await new Promise((resolve) => {
    process.stdin.on('end', resolve)
    process.stdin.resume()
  })
  for (const { client } of clients) client.provider.destroy()
  return { done: true }
}

main().then(
  (result) => { process.stdout.write(JSON.stringify(result) + '\n'); process.exit(0) },
  (error) => { process.stdout.write(JSON.stringify({ error: String(error?.stack ?? error) }) + '\n'); process.exit(1) }
)
