"""PAI-EAS: the service's state from ``DescribeService`` (EAS API 2021-07-01, ``GET
/api/v2/services/{ClusterId}/{ServiceName}``): ``Status``, ``RunningInstance`` of ``TotalInstance``,
``PendingInstance``, ``Reason`` and ``Message``, ``IntranetEndpoint`` and ``InternetEndpoint``, ``UpdateTime``.

What EAS does not expose: the weight load inside an instance (the service is Creating, or Running with fewer running
instances, until the engine's readiness probe passes) and restart counts (ListServiceInstances has them per instance;
status does not read it). The SDK (``alibabacloud-eas20210701``) is not one of k3infra's dependencies; where it is
missing the line says what it would read and is ``unknown``.

Statuses (EAS Service struct): Creating, Waiting, Starting, Running, HotUpdate, Updating, Stopping, Stopped,
Deleting, Deleted, Failed, DeleteFailed.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...clock import parse
from ...config import StackConfig
from ...config.naming import eas_service_name
from ..lines import FAILED, OK, PROGRESS, UNKNOWN, Line

ACTION = "eas:DescribeService"
RUNNING = ("Running",)
WAITING = ("Creating", "Waiting", "Starting", "HotUpdate", "Updating")
GONE = ("Failed", "DeleteFailed", "Stopped", "Stopping", "Deleting", "Deleted")


@dataclass(frozen=True)
class Service:
    """The DescribeService answer (REST JSON), or why none was read."""

    body: dict[str, Any] | None = None
    error: str = ""


Describer = Callable[[str, str], dict[str, Any]]
"""``(region, service name)`` to DescribeService's body."""


def _describe(region: str, name: str) -> dict[str, Any]:
    from alibabacloud_eas20210701.client import Client  # type: ignore[import-not-found,unused-ignore]

    raise NotImplementedError(f"{Client.__module__}: reading DescribeService through the EAS SDK is not written yet")


def service_name(cfg: StackConfig, outputs: dict[str, Any] | None) -> str:
    """The EAS service: the stack's ``easServiceName`` output, else the name the stack gives it."""
    if (outputs or {}).get("easServiceName"):
        return str(outputs["easServiceName"])  # type: ignore[index]
    return eas_service_name(cfg.stack)


def observe(region: str, name: str, describe: Describer = _describe) -> Service:
    """DescribeService, or why it could not be read (never raised)."""
    try:
        return Service(body=describe(region, name))
    except ImportError:
        return Service(error=f"the EAS SDK (alibabacloud-eas20210701) is not installed: status would read "
                       f"DescribeService ({ACTION}) for Status, RunningInstance of TotalInstance, Reason and Message, "
                       "and the endpoints")
    except Exception as e:  # noqa: BLE001 - any SDK or sign-in failure: said
        text = str(e).strip().splitlines()
        return Service(error=f"EAS DescribeService: {type(e).__name__}: {text[0][:200] if text else ''}")


def lines(svc: Service, name: str, now: datetime, budget_seconds: int) -> tuple[Line, ...]:
    """``server`` (the service's state and instances, against the start-up budget while it creates) and
    ``endpoint``."""
    if svc.body is None:
        return (Line("server", f"EAS service {name}", UNKNOWN, "not readable", svc.error),)
    b = svc.body
    status = str(b.get("Status") or "")
    running, total = int(b.get("RunningInstance") or 0), int(b.get("TotalInstance") or 0)
    pending = b.get("PendingInstance")
    counts = f"{running} of {total} instances running" + (f", {pending} pending" if pending else "")
    why = "; ".join(str(b[k]) for k in ("Reason", "Message") if b.get(k))
    detail = counts + (f"; {why}" if why else "")
    extra = {"eas": {"status": status, "runningInstance": running, "totalInstance": total,
                     "pendingInstance": pending, "reason": b.get("Reason") or None, "message": b.get("Message") or None}}
    look = f"the EAS console, service {name}: its events and instance logs (`eascmd desc {name}`)"
    since = b.get("UpdateTime") or b.get("CreateTime")
    elapsed = max(0, int((now - parse(since)).total_seconds())) if since else None
    if status in GONE:
        server = Line("server", f"EAS service {name}", FAILED, status.lower(), detail, look=look, extra=extra)
    elif status in RUNNING and total and running >= total:
        server = Line("server", f"EAS service {name}", OK, "running", detail, extra=extra)
    else:
        late = status in WAITING and elapsed is not None and elapsed > budget_seconds
        server = Line("server", f"EAS service {name}", FAILED if late else PROGRESS,
                      (status or "unknown").lower() + (" (over budget)" if late else ""), detail, elapsed,
                      budget_seconds, look if late else "", extra=extra)
    endpoints = [("intranet", b.get("IntranetEndpoint")), ("internet", b.get("InternetEndpoint"))]
    out = [server]
    for kind, url in endpoints:
        if url:
            out.append(Line("endpoint", kind, OK if server.state == OK else PROGRESS,
                            "serving" if server.state == OK else "not ready", f"{url}/v1", extra={"url": url}))
    return tuple(out)
