"""Google Cloud: the specific reservation the GPU pool consumes, ``reservations.get`` (Compute Engine API) through
google-cloud-compute where it is installed (it is not one of k3infra's dependencies: ``pip install
google-cloud-compute``), with Application Default Credentials. The response is read as the REST JSON
(``Reservation.to_json``): ``status`` (CREATING, READY, UPDATING, DELETING, INVALID), ``specificReservation.count``
and ``inUseCount``; a reservation has no end of its own unless ``deleteAtTime`` is set (auto-delete), and a
calendar-mode future reservation's window is on the future reservation, which the stack does not name.
"""

import json
from collections.abc import Callable
from typing import Any

from .window import Capacity

FAILED, WAITING = ("INVALID", "DELETING"), ("CREATING", "UPDATING")
REMEDY = ("the reservation is gone or unusable: `gcloud compute reservations describe`, then point "
          "k3infra:capacity.reservation at a READY reservation of the stack's machine type and zone")

Getter = Callable[[str, str, str], dict[str, Any]]
"""``(project, zone, reservation)`` to the reservation's REST JSON."""


def _get(project: str, zone: str, reservation: str) -> dict[str, Any]:
    from google.cloud import compute_v1  # type: ignore[import-not-found,unused-ignore]

    r = compute_v1.ReservationsClient().get(project=project, zone=zone, reservation=reservation)
    return dict(json.loads(compute_v1.Reservation.to_json(r)))


def reservation(project: str | None, zone: str, name: str | None, get: Getter = _get) -> Capacity:
    """The reservation ``name`` (the block and sub-block are inside it) in ``project``/``zone``."""
    kind = f"reservation {name or '(none)'}"
    if not (project and name):
        return Capacity(kind=kind, unreadable="no reservation or project in the stack", remedy=REMEDY)
    try:
        r = get(project, zone, name)
    except ImportError:
        return Capacity(kind=kind, unreadable="google-cloud-compute is not installed (pip install "
                        "google-cloud-compute): it would read reservations.get status, count and inUseCount",
                        remedy=REMEDY)
    except Exception as e:  # noqa: BLE001 - any SDK or sign-in failure: said, never raised
        text = str(e).strip().splitlines()
        return Capacity(kind=kind, unreadable=f"Compute reservations.get: {type(e).__name__}: "
                        f"{text[0][:200] if text else ''}", remedy=REMEDY)
    spec = r.get("specificReservation") or {}
    detail = (f"{spec.get('inUseCount', 0)} of {spec.get('count', '?')} x "
              f"{(spec.get('instanceProperties') or {}).get('machineType', '?')} in use in {zone}")
    return Capacity(kind=kind, state=str(r.get("status") or ""), end=r.get("deleteAtTime") or None, detail=detail,
                    source="Compute reservations.get", failed_states=FAILED, waiting_states=WAITING, remedy=REMEDY)
