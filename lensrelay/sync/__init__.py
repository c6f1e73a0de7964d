"""The y-websocket / y-sweet sync protocol."""
