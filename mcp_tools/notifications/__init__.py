"""Server-sent MCP notifications for handshake-era sessions and `subscriptions/listen` streams (which are
sessions underneath), whichever worker a change happens on.

- `events`: the per-session event log in the database (numbered, bounded) that the GET stream sends
  from and `Last-Event-ID` replays from, on any worker.
- `subscriptions`: `resources/subscribe` bookkeeping, and who is told about what.
- `produce`: turns the change feed into events, once: edits of subscribed documents
  (`notifications/resources/updated`) in the derive process, a derived view of the update log; documents
  appearing or going (`notifications/resources/list_changed`) and decisions on a session's suggestions
  (`notifications/message`) in the transaction of the change, where it happened.
- `task_status`: a task's new state (`notifications/tasks`) for the listen streams that named it, in the
  transaction of the decision, undo or purge that changed it.
- `guard`: a receiver's failure never undoes the change; this process's streams are woken at commit.
- `hub`: each process's open GET streams, fed from the event log.
"""
