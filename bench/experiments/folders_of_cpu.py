"""CPU of the access watch's read of where the open documents are (issue 36): `folders_of` over 300 ids,
200 calls, three rounds. Run against a scratch database, which it fills on first use:

    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/scratch
    .venv/bin/python manage.py migrate && .venv/bin/python bench/experiments/folders_of_cpu.py
"""

import os
import sys
import time

import django

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lensrelay.settings")
django.setup()

from lensrelay.access.liveaccess import folders_of  # noqa: E402
from lensrelay.models import Document, Folder  # noqa: E402

if not Folder.objects.filter(doc_id="folder-team").exists():
    folder = Folder.objects.create(name="Team", doc_id="folder-team")
    Document.objects.bulk_create(
        Document(folder=folder, uuid=f"u{i}", doc_id=f"doc-{i:04d}", path=f"/n{i}.md") for i in range(300)
    )
ids = {f"doc-{i:04d}" for i in range(300)}
assert len(folders_of(ids)) == 300
for _ in range(3):
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(200):
        folders_of(ids)
    cpu_ms, wall_ms = 1e3 * (time.process_time() - cpu) / 200, 1e3 * (time.perf_counter() - wall) / 200
    print(f"CPU {cpu_ms:.2f} ms, wall {wall_ms:.2f} ms per call")
