"""Server-sent MCP notifications for handshake-era sessions, whichever worker a change happens on.

- `events`: the per-session event log in the database (numbered, bounded) that the GET stream sends
  from and `Last-Event-ID` replays from, on any worker.
- `subscriptions`: `resources/subscribe` bookkeeping, and who is told about what.
- `produce`: turns the change feed into events, once, in the process where a change happened: edits of
  subscribed documents (`notifications/resources/updated`), documents appearing or going
  (`notifications/resources/list_changed`), and decisions on a session's suggestions
  (`notifications/message`).
- `hub`: each process's open GET streams, fed from the event log.
"""
