"""A minimal read-only client of the Kubernetes API from a kubeconfig, for the preview-time checks.

The Kubernetes provider reads the cluster at ``pulumi up``; what must be known before any resource is registered
(is a CRD served, do the GPU nodes advertise their GPUs) is read here, with the kubeconfig the provider gets. It
speaks what kubeconfigs use: the cluster's CA (``certificate-authority(-data)`` or ``insecure-skip-tls-verify``), a
client certificate and key, a bearer token (``token``, ``tokenFile``), or an ``exec`` credential plugin
(client.authentication.k8s.io ExecCredential, kubernetes.io/docs/reference/access-authn-authz/authentication
"client-go credential plugins"). Basic auth and the deprecated auth-provider plugins are not supported; the read
then fails with a message naming the key.
"""

import base64
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Mapping

import yaml

TIMEOUT_SECONDS = 15
"""Per request: a preview waits this long for an unreachable API server before it says so."""


class KubeconfigError(Exception):
    """The kubeconfig cannot be used, or the cluster cannot be read; the message says why."""


@dataclass(frozen=True)
class ApiClient:
    """GET requests to one cluster's API server."""

    server: str
    context: ssl.SSLContext
    headers: Mapping[str, str]

    def get(self, path: str, query: Mapping[str, str] | None = None) -> dict[str, Any] | None:
        """The JSON object at ``path``; None when the server answers 404."""
        url = self.server.rstrip("/") + path + ("?" + urllib.parse.urlencode(query) if query else "")
        req = urllib.request.Request(url, headers=dict(self.headers))
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_SECONDS, context=self.context) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise KubeconfigError(f"GET {path}: HTTP {e.code} {e.reason}") from e
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise KubeconfigError(f"cannot reach {self.server}: {getattr(e, 'reason', e)}") from e


def _materialize(data: str | None, path: str | None, base: str, tmp: str, name: str) -> str | None:
    """A file holding ``*-data`` (base64) or the path given (relative to the kubeconfig's directory)."""
    if data:
        out = os.path.join(tmp, name)
        with open(out, "wb") as f:
            f.write(base64.b64decode(data))
        return out
    if path:
        return path if os.path.isabs(path) else os.path.join(base, path)
    return None


def _exec_token(spec: Mapping[str, Any]) -> str:
    env = {**os.environ, **{e["name"]: e["value"] for e in spec.get("env") or []}}
    try:
        out = subprocess.run([spec["command"], *(spec.get("args") or [])], env=env, capture_output=True, text=True,
                             timeout=60, check=True).stdout
        return json.loads(out)["status"]["token"]
    except (OSError, subprocess.SubprocessError, KeyError, ValueError) as e:
        raise KubeconfigError(f"the exec credential plugin {spec.get('command')!r} gave no token: {e}") from e


def client(kubeconfig: str, *, is_path: bool, context: str | None = None) -> ApiClient:
    """A client for ``context`` (default: the current one) of the kubeconfig given by contents or path."""
    base = "."
    text = kubeconfig
    if is_path:
        path = os.path.expanduser(kubeconfig)
        base = os.path.dirname(os.path.abspath(path))
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise KubeconfigError(f"cannot read {path}: {e.strerror}") from e
    try:
        cfg = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise KubeconfigError(f"is not YAML: {e}") from e
    if not isinstance(cfg, dict):
        raise KubeconfigError("is not a kubeconfig (no mapping at its top)")
    name = context or cfg.get("current-context")
    by = {k: {i["name"]: i.get(k[:-1]) or {} for i in cfg.get(k) or [] if isinstance(i, dict) and "name" in i}
          for k in ("contexts", "clusters", "users")}
    ctx = by["contexts"].get(name or "")
    if ctx is None:
        raise KubeconfigError(f"has no context {name!r} (contexts: {', '.join(by['contexts']) or 'none'})")
    cluster, user = by["clusters"].get(ctx.get("cluster", ""), {}), by["users"].get(ctx.get("user", ""), {})
    server = cluster.get("server")
    if not server:
        raise KubeconfigError(f"context {name!r} names no cluster with a server")
    tmp = tempfile.mkdtemp(prefix="k3infra-kubeconfig-")
    try:
        return _client(server, cluster, user, base, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the context holds the key material once loaded


def _client(server: str, cluster: Mapping[str, Any], user: Mapping[str, Any], base: str, tmp: str) -> ApiClient:
    ssl_ctx = ssl.create_default_context(cafile=_materialize(cluster.get("certificate-authority-data"),
                                                             cluster.get("certificate-authority"), base, tmp, "ca"))
    if cluster.get("insecure-skip-tls-verify"):
        ssl_ctx.check_hostname = False
        ssl_ctx.verify_mode = ssl.CERT_NONE
    cert = _materialize(user.get("client-certificate-data"), user.get("client-certificate"), base, tmp, "cert")
    key = _materialize(user.get("client-key-data"), user.get("client-key"), base, tmp, "key")
    if cert:
        ssl_ctx.load_cert_chain(cert, key)
    headers = {"Accept": "application/json", "User-Agent": "k3infra-preview-check"}
    token = user.get("token")
    if not token and user.get("tokenFile"):
        with open(os.path.join(base, user["tokenFile"]), encoding="utf-8") as f:
            token = f.read().strip()
    if not token and isinstance(user.get("exec"), dict):
        token = _exec_token(user["exec"])
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return ApiClient(server=server, context=ssl_ctx, headers=headers)
