"""CPU of the derive process's search rows on PostgreSQL (issue 36): `search_index_documents` of ten notes
of about 3 KB (one transaction's worth, as a pass writes them), 100 times, three rounds; the notes' text
changes every time, as typing changes it. Run against a scratch database:

    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/scratch
    .venv/bin/python manage.py migrate && .venv/bin/python bench/experiments/search_upsert_cpu.py
"""

import os
import sys
import time

import django

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lensrelay.settings")
django.setup()

from lensrelay.search.index import search_index_documents  # noqa: E402
from lensrelay.search.rows import IndexedDocument  # noqa: E402

PARAGRAPH = "A team's notes on the relay, with links to [[Other note]] and #tags, typed live by people. "
BODY = "---\ntags: [team, notes]\n---\n" + PARAGRAPH * 30  # about 3 KB


def notes(round_: int, call: int) -> list[IndexedDocument]:
    return [
        IndexedDocument(
            doc_id=f"doc-{n}",
            folder_id=1,
            path=f"/Notes/note {n}.md",
            title=f"note {n}",
            text=f"⟨{round_}.{call}.{n}⟩ " + BODY,
            modified=time.time(),
        )
        for n in range(10)
    ]


for round_ in range(3):
    batches = [notes(round_, call) for call in range(100)]
    cpu, wall = time.process_time(), time.perf_counter()
    for batch in batches:
        search_index_documents(batch)
    cpu_us, wall_us = (1e6 * (time.process_time() - cpu) / 1000, 1e6 * (time.perf_counter() - wall) / 1000)
    print(f"CPU {cpu_us:.0f} µs, wall {wall_us:.0f} µs per note")
