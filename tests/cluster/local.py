"""A Kubernetes control plane on loopback, built from source by scripts/toolchain: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kwok (simulated nodes and their pods) and the LeaderWorkerSet controller
with its webhooks registered by URL, so the apiserver calls them for real.

``LocalCluster(dir).start()`` writes certificates, kubeconfigs and configuration under ``dir``, starts every
process on 127.0.0.1 with free ports (``dir/ports.json``), waits for each to be ready within a deadline, and
installs the LeaderWorkerSet CRDs, webhooks and GKE's critical-pod quota. ``stop()`` ends every process it
started and waits for them. ``scripts/local-cluster start|stop|status`` is the same from a shell. Standard library
and the ``openssl`` command only (scripts/local-cluster runs with any Python 3.11).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from tests.ports import free_ports

ROOT = Path(__file__).resolve().parents[2]
TOOLCHAIN_HOME = Path(os.environ.get("K3INFRA_TOOLCHAIN_HOME") or Path.home() / ".cache" / "k3infra" / "toolchain")
BIN = TOOLCHAIN_HOME / "bin"
SHARE = TOOLCHAIN_HOME / "share"
DEFAULT_DIR = ROOT / ".tools" / "cluster"
LWS_CRD = ROOT / "schemas" / "crds" / "lws-leaderworkersets.yaml"
"""The vendored CRD of the release the stacks install (schemas/crds/SOURCES.md), the schema their objects meet."""

PROGRAMS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "lws-manager")
SHARED_FILES = ("kubernetes/critical-pods-quota.yaml", "kwok/stages.yaml", "lws/webhook.yaml",
                "lws/crd-disaggregatedsets.yaml")

ADMISSION_PLUGINS = (
    # Kubernetes' default set (kube-apiserver --help, 1.35) and NodeRestriction: what EKS lists for every platform
    # version (docs.aws.amazon.com/eks/latest/userguide/platform-versions.html) and kube-up's GCE ADMISSION_CONTROL
    # (cluster/gce/config-default.sh) enable. ExtendedResourceToleration (EKS, GKE) is a cloud's choice:
    # LocalCluster(extra_admission_plugins=...) adds it where a node profile calls for it.
    "NamespaceLifecycle", "LimitRanger", "ServiceAccount", "TaintNodesByCondition", "PodSecurity", "Priority",
    "DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection", "PersistentVolumeClaimResize",
    "RuntimeClass", "CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction", "DefaultIngressClass", "NodeRestriction", "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota",
)

ADMISSION_CONFIG = """\
# kube-up's GCE configuration (k8s.io/kubernetes cluster/gce/gci/configure-helper.sh, "limit critical pods to
# kube-system by default"), which GKE applies too: a pod of a system-*-critical priority class is admitted only in
# a namespace with a ResourceQuota whose scope covers it (kube-system gets `gcp-critical-pods`).
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ResourceQuota
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ResourceQuotaConfiguration
    limitedResources:
    - resource: pods
      matchScopes:
      - scopeName: PriorityClass
        operator: In
        values: ["system-node-critical", "system-cluster-critical"]
"""

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
"""kwok manages a node (and its pods) only when it carries this annotation with the value ``fake``."""
LWS_NAMESPACE = "lws-system"
"""The namespace the chart installs into (its webhooks' Service namespace, the manager's leader-election one)."""
SERVICE_CIDR = "10.96.0.0/16"
START_TIMEOUT = 120.0
"""Seconds for the whole start; each wait fails with the component's log tail when it runs out."""
STOP_TIMEOUT = 20.0


class ClusterError(RuntimeError):
    """A component failed to start or stop; the message names it and ends with its log."""


class KubectlError(subprocess.CalledProcessError):
    """kubectl exited non-zero; the message carries its stderr (what the apiserver or a webhook answered)."""

    def __str__(self) -> str:
        return f"{super().__str__()}\n{self.stderr}"


class KubectlTimeout(ClusterError):
    """A kubectl call ran past its timeout; the message names the command."""


def _text(out: bytes | str | None) -> str:
    return out.decode(errors="replace") if isinstance(out, bytes) else (out or "")


def missing_programs() -> list[str]:
    """Programs or data files scripts/toolchain has not built yet (empty: the cluster can start)."""
    missing = [p for p in PROGRAMS if not os.access(BIN / p, os.X_OK)]
    return missing + [f"share/{f}" for f in SHARED_FILES if not (SHARE / f).is_file()]


START_ATTEMPTS = 3
"""Starts with fresh ports after a component lost its port to another process (another test worker's cluster)."""


@dataclass(frozen=True)
class Component:
    """One process: its name (log and pid file), its command line and the URL that answers when it is ready."""

    name: str
    args: tuple[str, ...]
    ready_url: str


class LocalCluster:
    """The control plane under ``dir``; see the module docstring."""

    def __init__(self, dir: Path | str = DEFAULT_DIR, *, extra_admission_plugins: Sequence[str] = (),
                 tie_to_parent: bool = True) -> None:
        self.dir = Path(dir).resolve()
        self.extra_admission_plugins = tuple(extra_admission_plugins)
        self.tie_to_parent = tie_to_parent
        """End the processes when the starting process dies (a killed test session leaves nothing behind);
        scripts/local-cluster turns it off, its processes outlive it by design."""
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # --- paths ---------------------------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (``system:masters``)."""
        return self.dir / "kubeconfig"

    @property
    def pki(self) -> Path:
        return self.dir / "pki"

    @property
    def ports(self) -> dict[str, int]:
        """The ports of the running cluster, by use (``dir/ports.json``)."""
        return json.loads((self.dir / "ports.json").read_text())

    def _pid_file(self) -> Path:
        return self.dir / "pids.json"

    # --- public API ----------------------------------------------------------------------------------------
    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Runs the toolchain's kubectl (the cluster's own release) against this cluster as admin. A call still
        running after ``timeout`` seconds is killed and raises ``KubectlTimeout`` naming the command, whatever
        ``check`` says: a caller that waits on kubectl states what for in the command itself."""
        command = [str(BIN / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args]
        try:
            proc = subprocess.run(command, input=input, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise KubectlTimeout(f"kubectl {' '.join(args)} did not finish within {timeout:.0f} s"
                                 + (f"; it had written: {_text(e.stderr)[-400:]}" if e.stderr else "")) from None
        if check and proc.returncode:
            raise KubectlError(proc.returncode, proc.args, proc.stdout, proc.stderr)
        return proc

    def status(self) -> dict[str, int | None]:
        """Each component's pid while it runs, else None."""
        return {c: (pid if self._alive(pid) else None) for c, pid in self._recorded_pids().items()}

    def running(self) -> bool:
        """Every component runs and the apiserver is ready."""
        st = self.status()
        return bool(st) and all(st.values()) and self._ready(f"https://127.0.0.1:{self.ports['apiserver']}/readyz")

    def start(self) -> LocalCluster:
        """Starts the cluster unless it already runs (then nothing changes). A start after a stop, or after a
        component died, begins from an empty store."""
        missing = missing_programs()
        if missing:
            raise ClusterError(f"the toolchain is not built (missing {', '.join(missing)} under {TOOLCHAIN_HOME}): "
                               "run scripts/toolchain")
        if self.running():
            return self
        self.stop()
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                return self._start_once()
            except ClusterError as e:
                if attempt == START_ATTEMPTS or "address already in use" not in str(e):
                    raise
        raise AssertionError("unreachable")

    def _start_once(self) -> LocalCluster:
        deadline = time.monotonic() + START_TIMEOUT
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "logs").mkdir(exist_ok=True)
        shutil.rmtree(self.dir / "etcd", ignore_errors=True)
        ports = free_ports(("etcd", "etcd_peer", "apiserver", "controller_manager", "scheduler",
                            "kwok", "lws_webhook", "lws_metrics", "lws_health"))
        (self.dir / "ports.json").write_text(json.dumps(ports, indent=2) + "\n")
        self._write_pki()
        self._write_configs(ports)
        try:
            etcd, apiserver, *controllers = self._components(ports)
            for group in ([etcd], [apiserver], controllers):
                for c in group:
                    self._spawn(c)
                for c in group:
                    self._wait_ready(c, deadline)
                if group == [apiserver]:
                    self._install_crds()
            self._install(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Ends every recorded process (controllers first, etcd last), each with SIGTERM, then SIGKILL after
        STOP_TIMEOUT, and waits until each is gone."""
        recorded = self._recorded_pids()
        order = [n for n in ("lws-manager", "kwok", "kube-scheduler", "kube-controller-manager") if n in recorded]
        for group in (order, ["kube-apiserver"], ["etcd"]):
            pids = [recorded[n] for n in group if recorded.get(n) and self._alive(recorded[n])]
            for pid in pids:
                os.kill(pid, signal.SIGTERM)
            end = time.monotonic() + STOP_TIMEOUT
            for pid in pids:
                while self._alive(pid) and time.monotonic() < end:
                    time.sleep(0.05)
                if self._alive(pid):
                    os.kill(pid, signal.SIGKILL)
                    while self._alive(pid):
                        time.sleep(0.05)
        self._pid_file().unlink(missing_ok=True)

    # --- processes -----------------------------------------------------------------------------------------
    def _recorded_pids(self) -> dict[str, int]:
        try:
            return {k: int(v) for k, v in json.loads(self._pid_file().read_text()).items()}
        except (FileNotFoundError, ValueError):
            return {}

    def _alive(self, pid: int) -> bool:
        """The pid runs and is ours: its command line names this cluster's directory (a recycled pid is not)."""
        child = self._children.get(pid)
        if child is not None:
            if child.poll() is not None:
                return False
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return False
        return state != "Z" and str(self.dir).encode() in cmdline

    def _spawn(self, c: Component) -> None:
        log = open(self.dir / "logs" / f"{c.name}.log", "ab")
        tie = self.tie_to_parent

        def preexec() -> None:
            os.setsid()
            if tie:  # PR_SET_PDEATHSIG: SIGTERM when the starting process exits
                import ctypes
                ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)

        proc = subprocess.Popen(c.args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                cwd=self.dir, preexec_fn=preexec, close_fds=True)
        log.close()
        self._children[proc.pid] = proc
        pids = self._recorded_pids() | {c.name: proc.pid}
        self._pid_file().write_text(json.dumps(pids, indent=2) + "\n")

    def _ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx

    def _ready(self, url: str) -> bool:
        try:
            ctx = self._ssl_context() if url.startswith("https") else None
            with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:
                return resp.status == 200
        except (OSError, urllib.error.URLError, ssl.SSLError):
            return False

    def _wait_ready(self, c: Component, deadline: float) -> None:
        pid = self._recorded_pids()[c.name]
        while time.monotonic() < deadline:
            if not self._alive(pid):
                raise ClusterError(f"{c.name} exited while starting\n{self._log_tail(c.name)}")
            if self._ready(c.ready_url):
                return
            time.sleep(0.2)
        raise ClusterError(f"{c.name} not ready at {c.ready_url} within {START_TIMEOUT:.0f} s\n"
                           f"{self._log_tail(c.name)}")

    def _log_tail(self, name: str, lines: int = 30) -> str:
        try:
            return "\n".join((self.dir / "logs" / f"{name}.log").read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    # --- certificates and configuration --------------------------------------------------------------------
    def _openssl(self, *args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=self.pki)

    def _ca(self, name: str) -> None:
        if not (self.pki / f"{name}.crt").exists():
            self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", f"{name}.key", "-subj", f"/CN=k3infra-local-{name}", "-days", "3650",
                          "-sha256", "-addext", "basicConstraints=critical,CA:TRUE",
                          "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", f"{name}.crt")

    def _cert(self, name: str, subject: str, *, sans: str = "", client: bool = False, ca: str = "ca") -> None:
        if (self.pki / f"{name}.crt").exists():
            return
        usage = "clientAuth" if client else "serverAuth"
        ext = f"basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n" \
              f"extendedKeyUsage={usage}\n" + (f"subjectAltName={sans}\n" if sans else "")
        (self.pki / f"{name}.ext").write_text(ext)
        self._openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", f"{name}.key", "-subj", subject, "-out", f"{name}.csr")
        self._openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
                      "-CAcreateserial",
                      "-days", "3650", "-sha256", "-extfile", f"{name}.ext", "-out", f"{name}.crt")

    def _write_pki(self) -> None:
        """The cluster CA with the apiserver's, controllers' and LWS webhook's serving certificates and a client
        certificate per identity; the aggregation layer's front-proxy CA and client (as kubeadm lays them out);
        the service-account signing key. Made once per directory; EC P-256 keys (fast to make)."""
        self.pki.mkdir(parents=True, exist_ok=True)
        os.chmod(self.pki, 0o700)
        self._ca("ca")
        self._ca("front-proxy-ca")
        self._cert("front-proxy-client", "/CN=front-proxy-client", client=True, ca="front-proxy-ca")
        self._cert("apiserver", "/CN=kube-apiserver", sans="IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,"
                   "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,"
                   "DNS:kubernetes.default.svc.cluster.local")
        for name in ("controller-manager-serving", "scheduler-serving"):
            self._cert(name, f"/CN={name}", sans="IP:127.0.0.1,DNS:localhost")
        self._cert("lws-webhook", f"/CN=lws-webhook-service.{LWS_NAMESPACE}.svc",
                   sans="IP:127.0.0.1,DNS:localhost")
        self._cert("admin", "/O=system:masters/CN=kubernetes-admin", client=True)
        self._cert("controller-manager", "/CN=system:kube-controller-manager", client=True)
        self._cert("scheduler", "/CN=system:kube-scheduler", client=True)
        if not (self.pki / "sa.key").exists():
            self._openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key")
            self._openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        lws_certs = self.dir / "lws-certs"
        lws_certs.mkdir(exist_ok=True)
        shutil.copyfile(self.pki / "lws-webhook.crt", lws_certs / "tls.crt")
        shutil.copyfile(self.pki / "lws-webhook.key", lws_certs / "tls.key")

    def _kubeconfig(self, path: Path, user: str, server_port: int) -> None:
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "local",
            "clusters": [{"name": "local", "cluster": {"server": f"https://127.0.0.1:{server_port}",
                                                       "certificate-authority": str(self.pki / "ca.crt")}}],
            "users": [{"name": user, "user": {"client-certificate": str(self.pki / f"{user}.crt"),
                                              "client-key": str(self.pki / f"{user}.key")}}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
        }
        path.write_text(json.dumps(config, indent=2) + "\n")
        path.chmod(0o600)

    def _write_configs(self, ports: dict[str, int]) -> None:
        self._kubeconfig(self.kubeconfig, "admin", ports["apiserver"])
        for user in ("controller-manager", "scheduler"):
            self._kubeconfig(self.dir / f"{user}.kubeconfig", user, ports["apiserver"])
        (self.dir / "admission.yaml").write_text(ADMISSION_CONFIG)
        (self.dir / "lws-config.yaml").write_text(json.dumps({
            # sigs.k8s.io/lws api/config/v1alpha1 Configuration: no internal certificate rotation (it would
            # rewrite the webhooks' caBundle for an in-cluster Service), every listener on loopback.
            "apiVersion": "config.lws.x-k8s.io/v1alpha1", "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"host": "127.0.0.1", "port": ports["lws_webhook"], "certDir": str(self.dir / "lws-certs")},
            "metrics": {"bindAddress": f"127.0.0.1:{ports['lws_metrics']}"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['lws_health']}"},
        }, indent=2) + "\n")

    def _components(self, ports: dict[str, int]) -> list[Component]:
        d, pki = self.dir, self.pki
        etcd_url = f"http://127.0.0.1:{ports['etcd']}"
        peer_url = f"http://127.0.0.1:{ports['etcd_peer']}"
        admin = str(self.kubeconfig)
        plugins = ",".join(dict.fromkeys(ADMISSION_PLUGINS + self.extra_admission_plugins))
        secure = ("--bind-address=127.0.0.1", "--leader-elect=false")
        return [
            Component("etcd", (
                str(BIN / "etcd"), "--name=local", f"--data-dir={d / 'etcd'}",
                f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=local={peer_url}", "--log-level=warn",
                # A disposable store: fsync buys nothing and costs seconds per test on a shared disk.
                "--unsafe-no-fsync=true"), f"{etcd_url}/health"),
            Component("kube-apiserver", (
                str(BIN / "kube-apiserver"), f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={ports['apiserver']}",
                # The `kubernetes` Service keeps no endpoints: Endpoints validation refuses a loopback address
                # ("may not be in the loopback range"), and nothing here runs a pod that would call it.
                "--endpoint-reconciler-type=none",
                f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                # The aggregation layer, configured as on every managed cluster (metrics-server's APIService).
                f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
                "--requestheader-allowed-names=front-proxy-client", "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group", "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
                f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}", "--authorization-mode=Node,RBAC",
                f"--enable-admission-plugins={plugins}", f"--admission-control-config-file={d / 'admission.yaml'}",
                "--allow-privileged=true", "--profiling=false", "--shutdown-delay-duration=0s",
                # Pods created by tests never reach a kubelet; logs/exec go to kwok, which serves plain HTTP.
                "--kubelet-preferred-address-types=InternalIP"), f"https://127.0.0.1:{ports['apiserver']}/readyz"),
            Component("kube-controller-manager", (
                str(BIN / "kube-controller-manager"), *secure, f"--secure-port={ports['controller_manager']}",
                f"--kubeconfig={d / 'controller-manager.kubeconfig'}",
                f"--authentication-kubeconfig={d / 'controller-manager.kubeconfig'}",
                f"--authorization-kubeconfig={d / 'controller-manager.kubeconfig'}",
                f"--tls-cert-file={pki / 'controller-manager-serving.crt'}",
                f"--tls-private-key-file={pki / 'controller-manager-serving.key'}",
                f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
                "--use-service-account-credentials=true",
                f"--cluster-signing-cert-file={pki / 'ca.crt'}", f"--cluster-signing-key-file={pki / 'ca.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}", "--controllers=*",
                "--profiling=false"), f"https://127.0.0.1:{ports['controller_manager']}/healthz"),
            Component("kube-scheduler", (
                str(BIN / "kube-scheduler"), *secure, f"--secure-port={ports['scheduler']}",
                f"--kubeconfig={d / 'scheduler.kubeconfig'}",
                f"--authentication-kubeconfig={d / 'scheduler.kubeconfig'}",
                f"--authorization-kubeconfig={d / 'scheduler.kubeconfig'}",
                f"--tls-cert-file={pki / 'scheduler-serving.crt'}",
                f"--tls-private-key-file={pki / 'scheduler-serving.key'}", "--profiling=false"),
                f"https://127.0.0.1:{ports['scheduler']}/readyz"),
            Component("kwok", (
                str(BIN / "kwok"), f"--kubeconfig={admin}", f"--config={SHARE / 'kwok' / 'stages.yaml'}",
                "--manage-all-nodes=false", f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
                f"--server-address=127.0.0.1:{ports['kwok']}", f"--node-port={ports['kwok']}",
                "--node-lease-duration-seconds=40", "--cidr=10.244.0.0/16"),
                f"http://127.0.0.1:{ports['kwok']}/healthz"),
            Component("lws-manager", (
                str(BIN / "lws-manager"), f"--kubeconfig={admin}", f"--config={d / 'lws-config.yaml'}",
                "--zap-log-level=info"), f"http://127.0.0.1:{ports['lws_health']}/readyz"),
        ]

    # --- objects installed at start ------------------------------------------------------------------------
    def _install_crds(self) -> None:
        """Before the controllers start (the LWS manager's informers need them): the CRDs it serves, established,
        its namespace, and kube-system's critical-pod quota."""
        self.kubectl("apply", "--server-side", "-f", str(LWS_CRD),
                     "-f", str(SHARE / "lws" / "crd-disaggregatedsets.yaml"),
                     "-f", str(SHARE / "kubernetes" / "critical-pods-quota.yaml"))
        self.kubectl("create", "namespace", LWS_NAMESPACE, check=False)
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                     "crd/leaderworkersets.leaderworkerset.x-k8s.io",
                     "crd/disaggregatedsets.disaggregatedset.x-k8s.io")

    def _install(self, deadline: float) -> None:
        """The LWS webhooks by URL once their server answers; then waits for the default ServiceAccount (the
        controller-manager's serviceaccount controller), which every pod needs."""
        self._wait_webhook_server(self.ports["lws_webhook"], deadline)
        self.install_webhooks()
        while time.monotonic() < deadline:
            if self.kubectl("get", "serviceaccount", "default", "-n", "default", check=False).returncode == 0:
                return
            time.sleep(0.2)
        raise ClusterError("the default ServiceAccount did not appear (kube-controller-manager's serviceaccount "
                           f"controller)\n{self._log_tail('kube-controller-manager')}")

    def _wait_webhook_server(self, port: int, deadline: float) -> None:
        """Until the manager's webhook server answers on its mutating path (it registers the handlers once its
        controllers are set up; before that the path is a 404, and the apiserver's calls would fail)."""
        url = f"https://127.0.0.1:{port}/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        while time.monotonic() < deadline:
            try:
                request = urllib.request.Request(url, data=b"{}", method="POST",
                                                 headers={"Content-Type": "application/json"})
                urllib.request.urlopen(request, timeout=2, context=ctx)
                return
            except urllib.error.HTTPError as e:
                if e.code != 404:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise ClusterError(f"the LWS webhook server did not serve {url}\n{self._log_tail('lws-manager')}")

    def install_webhooks(self) -> None:
        """Registers (again) the LWS webhook configurations, by URL on loopback."""
        self.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(self._webhooks(self.ports["lws_webhook"])))

    def _webhooks(self, port: int) -> dict[str, object]:
        """The chart's MutatingWebhookConfiguration and ValidatingWebhookConfiguration (charts/lws/templates/webhook
        of the built release, with its default values: no DisaggregatedSet webhook), each webhook's in-cluster
        Service replaced by a URL on loopback and our CA."""
        import base64

        text = (SHARE / "lws" / "webhook.yaml").read_text()
        docs = [_yaml_objects(part) for part in _render_chart(text).split("\n---")]
        ca = base64.b64encode((self.pki / "ca.crt").read_bytes()).decode()
        for doc in docs:
            for hook in doc["webhooks"]:
                path = hook["clientConfig"]["service"]["path"]
                hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}
        return {"apiVersion": "v1", "kind": "List", "items": docs}


def _render_chart(text: str) -> str:
    """The chart template with its default values: the namespace filled in, the blocks guarded by values that
    default to false (enableDisaggregatedSet, enableCertManager) dropped. Refuses any other template action."""
    out: list[str] = []
    skipping = 0
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("{{") and (" if " in stripped or stripped.startswith(("{{ if", "{{- if"))):
            if ".Values.enableDisaggregatedSet" not in stripped and ".Values.enableCertManager" not in stripped:
                raise ClusterError(f"unexpected template condition in the LWS chart: {stripped}")
            skipping += 1
            continue
        if stripped in ("{{- end }}", "{{ end }}"):
            skipping -= 1
            continue
        if skipping:
            continue
        line = line.replace("{{ .Release.Namespace }}", LWS_NAMESPACE)
        if "{{" in line:
            raise ClusterError(f"unexpected template action in the LWS chart: {stripped}")
        out.append(line)
    return "\n".join(out)


def _yaml_objects(text: str) -> dict:
    """One YAML document as a dict (PyYAML: k3infra's own dependency, and in Debian's python3-yaml)."""
    import yaml

    return yaml.safe_load(text)


def main(argv: Sequence[str] | None = None) -> int:
    """scripts/local-cluster start|stop|status [--dir DIR]."""
    parser = argparse.ArgumentParser(prog="scripts/local-cluster",
                                     description="The local Kubernetes control plane on loopback.")
    parser.add_argument("command", choices=("start", "stop", "status"))
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="state directory (default .tools/cluster)")
    parser.add_argument("--extra-admission-plugins", default="",
                        help="comma-separated admission plugins to enable beside the default set")
    parser.add_argument("--stack", help="start: also GPU nodes shaped like this existing-cluster stack and an S3 "
                        "bucket on loopback (the local try-out, docs/try-it.md; tests/cluster/tryout.py)")
    args = parser.parse_args(argv)
    cluster = LocalCluster(args.dir, extra_admission_plugins=[p for p in args.extra_admission_plugins.split(",") if p],
                           tie_to_parent=False)
    try:
        if args.command == "start":
            began = time.monotonic()
            was_running = cluster.running()
            cluster.start()
            state = "already running" if was_running else f"started in {time.monotonic() - began:.1f} s"
            print(f"local cluster {state}: KUBECONFIG={cluster.kubeconfig}")
            if args.stack:
                from . import tryout
                try:
                    print("\n".join(tryout.describe(tryout.start(cluster, args.stack), cluster)))
                except tryout.TryoutError as e:
                    print(f"local-cluster: {e}", file=sys.stderr)
                    return 2
                except ImportError as e:
                    print(f"local-cluster: --stack needs the project's virtualenv ({e.name} is missing): python3 -m "
                          "venv .venv && .venv/bin/pip install -e '.[test]'", file=sys.stderr)
                    return 2
        elif args.command == "stop":
            if (cluster.dir / "tryout.json").exists():
                from . import tryout
                tryout.stop(cluster)
            cluster.stop()
            print("local cluster stopped")
        else:
            st = cluster.status()
            for name, pid in st.items():
                print(f"{name}: {'running, pid ' + str(pid) if pid else 'not running'}")
            if (cluster.dir / "tryout.json").exists():
                from . import tryout
                state = tryout.read(cluster)
                print("\n".join(tryout.describe(state, cluster) if state else []))
            if not st:
                print("local cluster not running")
            return 0 if st and all(st.values()) else 3
    except ClusterError as e:
        print(f"local-cluster: {e}", file=sys.stderr)
        return 1
    return 0
