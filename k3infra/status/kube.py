"""A read-only Kubernetes API client from a kubeconfig: GET requests only, standard library only.

Supports what managed clusters' kubeconfigs use: a server CA (file or data), client certificates (file or data),
bearer tokens (inline or tokenFile) and exec credential plugins (``aws eks get-token``, ``gke-gcloud-auth-plugin``,
``kubelogin``: client.authentication.k8s.io ExecCredential on stdout).
"""

import base64
import json
import os
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

TIMEOUT_SECONDS = 20.0


class KubeError(Exception):
    """The cluster could not be read: the message says what was asked and what the apiserver answered."""


class Forbidden(KubeError):
    """The credentials may not read something status reads (the read-only role is missing a rule)."""


def _named(items: list[dict[str, Any]] | None, name: str | None, what: str, path: Path) -> dict[str, Any]:
    for item in items or []:
        if item.get("name") == name:
            return item.get(what) or {}
    raise KubeError(f"kubeconfig {path}: no {what} named {name!r}")


def _file_or_data(entry: dict[str, Any], key: str, base: Path, tmp: Path) -> str | None:
    if entry.get(f"{key}-data"):
        out = tmp / key
        out.write_bytes(base64.b64decode(entry[f"{key}-data"]))
        return str(out)
    if entry.get(key):
        return str((base / entry[key]).resolve())
    return None


@dataclass
class Kube:
    """GET-only access to one cluster (the kubeconfig's current context, or ``context``)."""

    server: str
    ssl_context: ssl.SSLContext
    token: str | None

    @classmethod
    def from_kubeconfig(cls, path: Path, context: str | None = None) -> "Kube":
        try:
            cfg = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise KubeError(f"kubeconfig {path}: {e}") from None
        return cls._from_config(cfg, path.resolve().parent, context, str(path))

    @classmethod
    def from_kubeconfig_text(cls, text: str, context: str | None = None, label: str = "kubeconfig",
                             base: Path | None = None) -> "Kube":
        """A kubeconfig given as text (a stack output); relative file names in it are relative to ``base``
        (default: the current directory). ``label`` names it in messages."""
        try:
            cfg = yaml.safe_load(text) or {}
        except yaml.YAMLError as e:
            raise KubeError(f"{label}: not YAML: {str(e).splitlines()[0]}") from None
        if not isinstance(cfg, dict):
            raise KubeError(f"{label}: not a kubeconfig (a {type(cfg).__name__})")
        return cls._from_config(cfg, base or Path.cwd(), context, label)

    @classmethod
    def _from_config(cls, cfg: dict[str, Any], base: Path, context: str | None, label: str) -> "Kube":
        path = Path(label)
        ctx_name = context or cfg.get("current-context")
        if not ctx_name:
            raise KubeError(f"kubeconfig {label}: no current-context (give --context)")
        ctx = _named(cfg.get("contexts"), ctx_name, "context", path)
        cluster = _named(cfg.get("clusters"), ctx.get("cluster"), "cluster", path)
        user = _named(cfg.get("users"), ctx.get("user"), "user", path) if ctx.get("user") else {}
        with tempfile.TemporaryDirectory(prefix="k3infra-status-") as d:  # key files live only while loaded
            return cls._load(cluster, user, base, Path(d))

    @classmethod
    def _load(cls, cluster: dict[str, Any], user: dict[str, Any], base: Path, tmp: Path) -> "Kube":
        ca = _file_or_data(cluster, "certificate-authority", base, tmp)
        if cluster.get("insecure-skip-tls-verify"):
            sslctx = ssl._create_unverified_context()  # noqa: S323 - the kubeconfig asks for it
        else:
            sslctx = ssl.create_default_context(cafile=ca)
        token = user.get("token")
        if user.get("tokenFile"):
            token = Path(base / user["tokenFile"]).read_text().strip()
        cert, key = (_file_or_data(user, "client-certificate", base, tmp), _file_or_data(user, "client-key", base, tmp))
        if user.get("exec"):
            token, cert, key = _exec_credential(user["exec"], tmp, token, cert, key)
        if cert and key:
            sslctx.load_cert_chain(cert, key)
        return cls(server=str(cluster["server"]).rstrip("/"), ssl_context=sslctx, token=token)

    def get(self, path: str, **query: str) -> dict[str, Any] | None:
        """The object or list at ``path`` (None when it does not exist)."""
        url = self.server + path + (("?" + urllib.parse.urlencode(query)) if query else "")
        req = urllib.request.Request(url, headers={"Accept": "application/json"})
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_SECONDS, context=self.ssl_context) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            body = e.read().decode(errors="replace")
            try:
                message = json.loads(body).get("message", body)
            except ValueError:
                message = body
            raise (Forbidden if e.code == 403 else KubeError)(f"GET {path}: {e.code} {message}") from None
        except (urllib.error.URLError, OSError) as e:
            raise KubeError(f"GET {self.server}{path}: {e}") from None


def _exec_credential(spec: dict[str, Any], tmp: Path, token: str | None, cert: str | None,
                     key: str | None) -> tuple[str | None, str | None, str | None]:
    env = {**os.environ, **{e["name"]: e["value"] for e in spec.get("env") or []}}
    try:
        proc = subprocess.run([spec["command"], *(spec.get("args") or [])], capture_output=True, text=True,
                              env=env, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise KubeError(f"kubeconfig exec plugin {spec.get('command')}: {e}") from None
    if proc.returncode:
        raise KubeError(f"kubeconfig exec plugin {spec['command']} exited {proc.returncode}: {proc.stderr.strip()}")
    status = (json.loads(proc.stdout) or {}).get("status") or {}
    if status.get("clientCertificateData") and status.get("clientKeyData"):
        (tmp / "exec.crt").write_text(status["clientCertificateData"])
        (tmp / "exec.key").write_text(status["clientKeyData"])
        cert, key = str(tmp / "exec.crt"), str(tmp / "exec.key")
    return status.get("token") or token, cert, key
