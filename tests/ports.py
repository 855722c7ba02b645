"""Ports for the servers tests start on loopback."""

from __future__ import annotations

import random
import socket
from typing import Sequence

PORT_RANGE = (20000, 32768)
"""Where the cluster's listening ports are drawn: below Linux's ephemeral range (ip_local_port_range, 32768-60999
by default), from which every outgoing connection takes its local port. A port the kernel handed out with bind(0)
and that we released could be taken by the apiserver's next connection to etcd before its owner listened on it
(CI saw lws-manager fail so: "bind: address already in use" on 53315)."""


def free_ports(names: Sequence[str]) -> dict[str, int]:
    """A distinct port per name, each free on 127.0.0.1 now, drawn at random from PORT_RANGE."""
    rng = random.SystemRandom()
    ports: dict[str, int] = {}
    while len(ports) < len(names):
        port = rng.randrange(*PORT_RANGE)
        if port in ports.values():
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports[names[len(ports)]] = port
    return ports


def free_port() -> int:
    """One port free on 127.0.0.1 now (see free_ports)."""
    return free_ports(("port",))["port"]
