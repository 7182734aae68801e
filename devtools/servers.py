"""Real storage servers on loopback for the tests: MinIO (S3), toxiproxy in
front of it, fake-gcs-server (GCS) and Azurite (Azure). Binaries come from
``scripts/install-tools.sh`` (``$FASTINGEST_CACHE_ROOT/tools``)."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

CACHE_ROOT = Path(
    os.environ.get(
        "FASTINGEST_CACHE_ROOT",
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fastingest-dev",
    )
)
TOOLS_BIN = CACHE_ROOT / "tools" / "bin"
AZURITE_BIN = CACHE_ROOT / "tools" / "azurite" / "node_modules" / ".bin" / "azurite-blob"

MINIO_USER = "fastingest"
MINIO_PASSWORD = "fastingest-secret"
AZURITE_ACCOUNT = "devstoreaccount1"
# Azurite's published, well-known development key (not a secret).
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 60.0, ok=(200,)) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status in ok:
                    return
        except urllib.error.HTTPError as e:
            if e.code in ok:
                return
            last = e
        except Exception as e:  # noqa: BLE001 - any failure means "not up yet"
            last = e
        time.sleep(0.2)
    raise RuntimeError(f"server at {url} did not come up: {last}")


@dataclass
class Server:
    name: str
    proc: subprocess.Popen
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def start(name: str, argv: list[str], workdir: Path, env: dict | None = None) -> Server:
    log = workdir / f"{name}.log"
    fh = open(log, "wb")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen(
        argv,
        stdout=fh,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
        cwd=workdir,
        start_new_session=True,
    )
    return Server(name, proc, log)


@dataclass
class Toxiproxy:
    api: str
    proxies: dict[str, str] = field(default_factory=dict)

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.api + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=60) as r:
            raw = r.read()
        return json.loads(raw) if raw else {}

    def create(self, name: str, upstream: str) -> str:
        port = free_port()
        listen = f"127.0.0.1:{port}"
        self._call("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream})
        self.proxies[name] = listen
        return listen

    def add_toxic(
        self,
        proxy: str,
        kind: str,
        attributes: dict,
        *,
        stream="downstream",
        toxicity: float = 1.0,
        name: str | None = None,
    ) -> str:
        name = name or f"{kind}_{stream}"
        self._call(
            "POST",
            f"/proxies/{proxy}/toxics",
            {
                "name": name,
                "type": kind,
                "stream": stream,
                "toxicity": toxicity,
                "attributes": attributes,
            },
        )
        return name

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def clear(self, proxy: str) -> None:
        for t in self._call("GET", f"/proxies/{proxy}/toxics") or []:
            self.remove_toxic(proxy, t["name"])

    def set_enabled(self, proxy: str, enabled: bool) -> None:
        self._call("POST", f"/proxies/{proxy}", {"enabled": enabled})

    def close_links(self, proxy: str) -> None:
        """Closes every connection through `proxy` (disables it, then enables
        it again on the same address)."""
        self.set_enabled(proxy, False)
        self.set_enabled(proxy, True)


class Servers:
    """Starts what is available; records why anything is missing."""

    def __init__(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="fastingest-servers-"))
        self.running: list[Server] = []
        self.missing: dict[str, str] = {}
        self.s3_endpoint: str | None = None
        self.toxi: Toxiproxy | None = None
        self.s3_proxy_endpoint: str | None = None
        self.gcs_endpoint: str | None = None
        self.gcs_data: Path | None = None
        self.azure_endpoint: str | None = None

    # -- MinIO -------------------------------------------------------------
    def start_minio(self, extra_env: dict[str, str] | None = None) -> None:
        exe = TOOLS_BIN / "minio"
        if not exe.exists():
            self.missing["minio"] = f"{exe} not installed (run scripts/install-tools.sh)"
            return
        port, console = free_port(), free_port()
        data = self.workdir / "minio-data"
        data.mkdir()
        self.running.append(
            start(
                "minio",
                [
                    str(exe),
                    "server",
                    str(data),
                    "--address",
                    f"127.0.0.1:{port}",
                    "--console-address",
                    f"127.0.0.1:{console}",
                    "--quiet",
                ],
                self.workdir,
                env={
                    "MINIO_ROOT_USER": MINIO_USER,
                    "MINIO_ROOT_PASSWORD": MINIO_PASSWORD,
                    "MINIO_BROWSER": "off",
                    "MINIO_UPDATE": "off",
                    **(extra_env or {}),
                },
            )
        )
        self.s3_endpoint = f"http://127.0.0.1:{port}"
        wait_http(self.s3_endpoint + "/minio/health/live")

    def start_toxiproxy(self) -> None:
        exe = TOOLS_BIN / "toxiproxy-server"
        if not exe.exists() or self.s3_endpoint is None:
            self.missing["toxiproxy"] = f"{exe} not installed or MinIO not running"
            return
        port = free_port()
        self.running.append(
            start(
                "toxiproxy",
                [
                    str(exe),
                    "-host",
                    "127.0.0.1",
                    "-port",
                    str(port),
                ],
                self.workdir,
            )
        )
        self.toxi = Toxiproxy(f"http://127.0.0.1:{port}")
        wait_http(self.toxi.api + "/version")
        listen = self.toxi.create("s3", self.s3_endpoint.removeprefix("http://"))
        self.s3_proxy_endpoint = f"http://{listen}"

    # -- fake-gcs-server -----------------------------------------------------
    def start_gcs(self) -> None:
        exe = TOOLS_BIN / "fake-gcs-server"
        if not exe.exists():
            self.missing["fake-gcs-server"] = f"{exe} not installed"
            return
        port = free_port()
        self.gcs_data = self.workdir / "gcs-data"
        (self.gcs_data / "test-bucket").mkdir(parents=True)
        self.running.append(
            start(
                "fake-gcs",
                [
                    str(exe),
                    "-scheme",
                    "http",
                    "-host",
                    "127.0.0.1",
                    "-port",
                    str(port),
                    "-backend",
                    "memory",
                    "-data",
                    str(self.gcs_data),
                    "-public-host",
                    f"127.0.0.1:{port}",
                    "-log-level",
                    "error",
                ],
                self.workdir,
            )
        )
        self.gcs_endpoint = f"http://127.0.0.1:{port}"
        wait_http(self.gcs_endpoint + "/storage/v1/b", ok=(200,))

    def gcs_service_account(self) -> Path:
        path = self.workdir / "gcs-sa.json"
        path.write_text(
            json.dumps(
                {
                    "gcs_base_url": self.gcs_endpoint,
                    "disable_oauth": True,
                    "client_email": "",
                    "private_key": "",
                    "private_key_id": "",
                }
            )
        )
        return path

    def gcs_upload(self, bucket: str, name: str, data: bytes) -> None:
        url = (
            f"{self.gcs_endpoint}/upload/storage/v1/b/{bucket}/o"
            f"?uploadType=media&name={urllib.request.quote(name, safe='')}"
        )
        req = urllib.request.Request(url, data=data, method="POST")
        req.add_header("Content-Type", "application/octet-stream")
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 200

    # -- Azurite -------------------------------------------------------------
    def start_azurite(self) -> None:
        if not AZURITE_BIN.exists():
            self.missing["azurite"] = f"{AZURITE_BIN} not installed"
            return
        if shutil.which("node") is None:
            self.missing["azurite"] = "node is not installed"
            return
        port = free_port()
        data = self.workdir / "azurite-data"
        data.mkdir()
        self.running.append(
            start(
                "azurite",
                [
                    str(AZURITE_BIN),
                    "--blobHost",
                    "127.0.0.1",
                    "--blobPort",
                    str(port),
                    "--location",
                    str(data),
                    "--skipApiVersionCheck",
                    "--loose",
                    "--silent",
                ],
                self.workdir,
            )
        )
        self.azure_endpoint = f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"
        wait_http(f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}?comp=list", ok=(200, 400, 403))

    def azure_create_container(self, container: str) -> None:
        """PUT Container, signed with SharedKey (the emulator's well-known key)."""
        date = dt.datetime.now(dt.UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")
        version = "2021-08-06"
        canon_headers = f"x-ms-date:{date}\nx-ms-version:{version}\n"
        canon_resource = f"/{AZURITE_ACCOUNT}/{AZURITE_ACCOUNT}/{container}\nrestype:container"
        # VERB, then Content-Encoding, -Language, -Length, -MD5, -Type, Date,
        # If-Modified-Since, If-Match, If-None-Match, If-Unmodified-Since, Range.
        fields = ["", "", "", "", "application/octet-stream", "", "", "", "", "", ""]
        to_sign = "PUT\n" + "\n".join(fields) + "\n" + canon_headers + canon_resource
        sig = base64.b64encode(
            hmac.new(base64.b64decode(AZURITE_KEY), to_sign.encode(), hashlib.sha256).digest()
        ).decode()
        req = urllib.request.Request(
            f"{self.azure_endpoint}/{container}?restype=container", data=b"", method="PUT"
        )
        req.add_header("Content-Type", "application/octet-stream")
        req.add_header("x-ms-date", date)
        req.add_header("x-ms-version", version)
        req.add_header("Authorization", f"SharedKey {AZURITE_ACCOUNT}:{sig}")
        try:
            urllib.request.urlopen(req, timeout=10).close()
        except urllib.error.HTTPError as e:
            if e.code != 409:  # already exists
                raise

    def azure_options(self) -> dict[str, str]:
        return {
            "account_name": AZURITE_ACCOUNT,
            "access_key": AZURITE_KEY,
            "endpoint": self.azure_endpoint,
            "allow_http": "true",
        }

    def minio_client(self, *, proxied: bool = False):
        """A boto3 S3 client for the running MinIO (path-style, SigV4), for
        set-up: buckets and uploads; `proxied`: through toxiproxy (URLs it
        presigns are signed for the proxy's address)."""
        import boto3
        from botocore.config import Config as BotoConfig

        return boto3.client(
            "s3",
            endpoint_url=self.s3_proxy_endpoint if proxied else self.s3_endpoint,
            aws_access_key_id=MINIO_USER,
            aws_secret_access_key=MINIO_PASSWORD,
            region_name="us-east-1",
            config=BotoConfig(signature_version="s3v4", s3={"addressing_style": "path"}),
        )

    def stop(self) -> None:
        for s in reversed(self.running):
            s.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)
