"""What one update log append writes on SQLite (issue 36): CPU and WAL frames per autocommit insert into a
copy of the log's table, with and without its `(doc_id, id)` index and `AUTOINCREMENT`.

    python bench/experiments/log_append_frames.py
"""

import datetime
import os
import sqlite3
import tempfile
import time

PAGE_FRAME = 4096 + 24  # a WAL frame: its header and one 4 KiB page


def run(directory: str, *, autoincrement: bool, index: bool, inserts: int = 3000) -> None:
    path = os.path.join(directory, f"log-{autoincrement}-{index}.db")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute(
        f"CREATE TABLE u (id integer primary key {'autoincrement' if autoincrement else ''}, "
        "doc_id varchar(100), data blob, writer varchar(32), author varchar(200), created datetime)"
    )
    if index:
        db.execute("CREATE INDEX ui ON u(doc_id, id)")
    sql = "INSERT INTO u (doc_id, data, writer, author, created) VALUES (?, ?, ?, ?, ?)"
    db.execute("BEGIN")
    for i in range(20000):  # a log with rows of 150 documents in it already
        db.execute(sql, (f"doc-{i % 150:03d}-{'x' * 24}", b"y" * 40, "w1", "token A", "2026-12-01 05:00:00"))
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    started = time.process_time()
    for i in range(inserts):
        now = str(datetime.datetime.now(datetime.UTC).replace(tzinfo=None))
        db.execute(sql, (f"doc-{i % 150:03d}-{'x' * 24}", b"x" * 40, "w1", "token A", now))
    cpu = (time.process_time() - started) / inserts * 1e6
    frames = os.path.getsize(path + "-wal") / PAGE_FRAME / inserts
    print(
        f"autoincrement={autoincrement} index={index}: {cpu:.1f} us CPU, {frames:.2f} WAL frames per insert"
    )


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as directory:
        for autoincrement in (True, False):
            for index in (True, False):
                run(directory, autoincrement=autoincrement, index=index)
