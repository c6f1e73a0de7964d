"""`manage.py import_vault` runs no system checks and still takes every option it took before."""

from __future__ import annotations

from pathlib import Path

from lensrelay.management.commands.import_vault import Command


def test_the_command_takes_skip_checks_though_it_runs_no_checks(tmp_path: Path) -> None:
    command = Command()
    assert not command.requires_system_checks
    parser = command.create_parser("manage.py", "import_vault")
    options = parser.parse_args([str(tmp_path), "--folder", "Vault", "--skip-checks", "--no-progress"])
    assert (options.path, options.folder, options.skip_checks) == (tmp_path, "Vault", True)
