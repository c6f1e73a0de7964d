"""`python -m lensrelay_sync PATH --url URL --token TOKEN [--folder NAME]`."""

from lensrelay_sync.cli import main

raise SystemExit(main())
