#!/usr/bin/env node
// A tiny WebSocket server that misbehaves on request, so the harness can prove it reports what a
// y-websocket client sees: close codes, permission-denied auth messages and unknown message types.
// Query parameters of the connection URL drive it:
//   deny=REASON   send an auth "permission denied" message (type 2, sub 0) with REASON
//   send102=1     send a message of type 102 with payload [1, 2, 3]
//   close=CODE    then close with CODE (and reason=TEXT); without it the socket stays open
// Every accepted connection is logged to stdout as one JSON line.
// HOST and PORT come from the environment, as for @y/websocket-server.

import http from 'node:http'
import { WebSocketServer } from 'ws'
import * as encoding from 'lib0/encoding'
import * as authProtocol from 'y-protocols/auth'

const host = process.env.HOST || '127.0.0.1'
const port = Number.parseInt(process.env.PORT || '1234', 10)

const server = http.createServer((_request, response) => {
  response.writeHead(200, { 'Content-Type': 'text/plain' })
  response.end('okay')
})
const wss = new WebSocketServer({ server })
let connections = 0

wss.on('connection', (ws, request) => {
  connections += 1
  const url = new URL(request.url, 'http://placeholder')
  const query = url.searchParams
  console.log(JSON.stringify({ connection: connections, path: url.pathname, query: url.search }))
  if (query.has('deny')) {
    const encoder = encoding.createEncoder()
    encoding.writeVarUint(encoder, 2)
    authProtocol.writePermissionDenied(encoder, query.get('deny'))
    ws.send(encoding.toUint8Array(encoder))
  }
  if (query.has('send102')) ws.send(new Uint8Array([102, 1, 2, 3]))
  if (query.has('close')) ws.close(Number.parseInt(query.get('close'), 10), query.get('reason') ?? '')
})

server.listen(port, host, () => console.log(JSON.stringify({ listening: `${host}:${port}` })))
