"""A real S3 API server for the tests: moto's standalone server (`moto_server`, from PyPI's moto[server])
in its own process on 127.0.0.1, with one bucket."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from .liveserver import free_port

BUCKET = "lens-relay-test"
REGION = "us-east-1"
KEY_ID = "test-key-id"
SECRET = "test-secret-key"


@dataclass(frozen=True)
class S3Server:
    endpoint: str

    def env(self) -> dict[str, str]:
        """The settings that point Lens Relay at this server."""
        return {
            "LENSRELAY_FILE_STORAGE": "s3",
            "LENSRELAY_S3_BUCKET": BUCKET,
            "LENSRELAY_S3_ENDPOINT_URL": self.endpoint,
            "LENSRELAY_S3_REGION": REGION,
            "LENSRELAY_S3_ACCESS_KEY_ID": KEY_ID,
            "LENSRELAY_S3_SECRET_ACCESS_KEY": SECRET,
            "LENSRELAY_S3_ADDRESSING_STYLE": "path",
        }

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=KEY_ID,
            aws_secret_access_key=SECRET,
        )

    def keys(self, prefix: str = "") -> list[str]:
        listed = self.client().list_objects_v2(Bucket=BUCKET, Prefix=prefix)
        return sorted(item["Key"] for item in listed.get("Contents", []))


@contextmanager
def s3_server(port: int | None = None, *, log: Path | None = None) -> Iterator[S3Server]:
    """Start `moto_server` and create the bucket; stop the server on exit."""
    port = port or free_port()
    executable = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or "moto_server"
    out = log.open("wb") if log is not None else subprocess.DEVNULL
    process = subprocess.Popen([executable, "-H", "127.0.0.1", "-p", str(port)], stdout=out, stderr=out)
    server = S3Server(endpoint=f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(server.endpoint + "/moto-api/", timeout=1)
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not start (exit {process.poll()})") from None
                time.sleep(0.2)
        server.client().create_bucket(Bucket=BUCKET)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if log is not None and hasattr(out, "close"):
            out.close()
