"""Client ID metadata documents: the one fetch, against an HTTPS server this test starts on 127.0.0.1.

Production refuses loopback (and every private or link-local address); the test configuration's
LENSRELAY_OAUTH_CIMD_ALLOW_LOOPBACK lets the fetch reach the local server, with the same size limit and
timeout.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.test.utils import override_settings
from oauth2_provider import cimd

from lensrelay.access.oauth_server import ClientMetadataFetcher

DOCUMENT = {"client_name": "Phone app", "redirect_uris": ["https://app.example/cb"]}


def _certificate(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/slow.json":
            time.sleep(3)
        body = json.dumps(DOCUMENT).encode()
        if self.path == "/big.json":
            body = json.dumps({**DOCUMENT, "padding": "x" * 20_000}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def https_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cert, key = _certificate(tmp_path_factory.mktemp("cimd"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@override_settings(LENSRELAY_OAUTH_CIMD_ALLOW_LOOPBACK=True)
def test_the_test_configuration_fetches_a_local_document(https_base: str) -> None:
    metadata, max_age = ClientMetadataFetcher().fetch(f"{https_base}/client.json")
    assert metadata == DOCUMENT and max_age > 0


def test_production_refuses_loopback(https_base: str) -> None:
    with pytest.raises(cimd.CIMDError, match="non-public address"):
        ClientMetadataFetcher().fetch(f"{https_base}/client.json")


@override_settings(LENSRELAY_OAUTH_CIMD_ALLOW_LOOPBACK=True)
def test_a_document_over_the_size_limit_is_refused(https_base: str) -> None:
    with pytest.raises(cimd.CIMDError, match="maximum allowed size"):
        ClientMetadataFetcher().fetch(f"{https_base}/big.json")


@override_settings(LENSRELAY_OAUTH_CIMD_ALLOW_LOOPBACK=True)
def test_a_slow_server_is_cut_off(https_base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cimd.oauth2_settings, "CIMD_FETCH_TIMEOUT_SECONDS", 0.5)
    started = time.monotonic()
    with pytest.raises(cimd.CIMDError):
        ClientMetadataFetcher().fetch(f"{https_base}/slow.json")
    assert time.monotonic() - started < 2


@override_settings(LENSRELAY_OAUTH_CIMD_ALLOW_LOOPBACK=True)
@pytest.mark.parametrize(
    "client_id", ["http://127.0.0.1:1/client.json", "https://127.0.0.1:1/", "https://x@127.0.0.1:1/a"]
)
def test_malformed_client_ids_are_refused(client_id: str) -> None:
    with pytest.raises(cimd.CIMDError):
        ClientMetadataFetcher().fetch(client_id)
