"""The Yjs wire protocol: y-websocket message framing and awareness states."""
