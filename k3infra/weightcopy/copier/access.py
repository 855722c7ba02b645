"""Authorization at start: prove the pod's identity may read (or write) the bucket, waiting out a grant that is still
propagating."""

from __future__ import annotations

import json
import time
from typing import Callable, Iterator, Sequence

from .marker import MARKER_DIR
from .store import ObjectStore

ACCESS_CHECK_KEY = f"{MARKER_DIR}/access-check"
"""The small object ``sync`` writes at start to prove its identity may write (overwritten by every run)."""
AUTH_BACKOFF_FIRST = 2.0
AUTH_BACKOFF_MAX = 30.0
"""Seconds between retries of a refused authorization: doubling from the first to the most."""


class AuthorizationError(RuntimeError):
    """The pod's identity was refused access to the bucket for the whole propagation window."""


AUTH_STATUS = frozenset({401, 403})
AUTH_ERROR_CODES = frozenset({
    # S3 (botocore ClientError codes; a HEAD answer has no body, and botocore names its status instead); OSS shares
    # AccessDenied, InvalidAccessKeyId and SignatureDoesNotMatch
    "AccessDenied", "AllAccessDisabled", "ExpiredToken", "InvalidAccessKeyId", "InvalidToken", "SignatureDoesNotMatch",
    "403", "401",
    # Azure Storage (x-ms-error-code)
    "AuthorizationFailure", "AuthorizationPermissionMismatch", "AuthenticationFailed", "InvalidAuthenticationInfo",
    # OSS (ServiceError.code)
    "SecurityTokenExpired", "InvalidSecurityToken",
})
"""Error codes that mean "this identity may not (yet)": the services' documented authorization errors."""
AUTH_ERROR_TYPES = frozenset({
    "NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError",  # botocore
    "ClientAuthenticationError", "CredentialUnavailableError",  # azure-core, azure-identity
    "RefreshError", "DefaultCredentialsError",  # google-auth (under gcsfs)
    "CredentialException",  # alibabacloud-credentials
    "CredentialsEmptyError", "CredentialsFetchError",  # alibabacloud-oss-v2
})
"""Exception types (by name: the copier imports only its own scheme's SDK) raised when the identity's credentials
cannot be had, e.g. a federated credential whose trust has not reached the token service."""


def _causes(e: BaseException) -> Iterator[BaseException]:
    """``e`` and every exception it wraps (cause, context, the OSS SDK's ``unwrap``), each once."""
    seen: set[int] = set()
    todo: list[BaseException] = [e]
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        unwrap = getattr(x, "unwrap", None)
        inner = unwrap() if callable(unwrap) else None
        todo += [c for c in (x.__cause__, x.__context__, inner) if isinstance(c, BaseException)]


def is_authorization_error(e: BaseException) -> bool:
    """True when ``e`` (or what it wraps) says the caller is not authenticated or not authorized: s3fs's and
    adlfs's PermissionError, gcsfs's "Forbidden" (it raises a plain OSError for 403, ``gcsfs/retry.py``), HTTP 401/403
    on an SDK's error, a documented authorization error code, or a credential provider's failure."""
    for x in _causes(e):
        if isinstance(x, PermissionError) or {t.__name__ for t in type(x).__mro__} & AUTH_ERROR_TYPES:
            return True
        if type(x) is OSError and str(x).startswith("Forbidden"):
            return True
        for attr in ("status_code", "status", "code"):
            value = getattr(x, attr, None)
            if isinstance(value, int) and value in AUTH_STATUS:
                return True
        for attr in ("code", "error_code"):
            value = getattr(x, attr, None)
            if isinstance(value, str) and value in AUTH_ERROR_CODES:
                return True
        response = getattr(x, "response", None)
        if isinstance(response, dict):
            error = response.get("Error") or {}
            status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
            if error.get("Code") in AUTH_ERROR_CODES or status in AUTH_STATUS:
                return True
    return False


def _error_code(x: BaseException) -> str | None:
    """The service's own error code or HTTP status on one exception, where it carries one."""
    response = getattr(x, "response", None)
    if isinstance(response, dict) and (response.get("Error") or {}).get("Code"):
        return str(response["Error"]["Code"])
    for attr in ("error_code", "code", "status_code"):
        value = getattr(x, attr, None)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and value:
            return str(value)
    return None


def _summary(e: BaseException) -> str:
    """The first line of an error, with its type and the service's error code found in what it wraps."""
    text = str(e).strip().splitlines()
    codes = [c for c in (_error_code(x) for x in _causes(e)) if c]
    return f"{type(e).__name__}: {text[0] if text else ''}{f' ({codes[0]})' if codes else ''}"[:300]


def check_access(store: ObjectStore, roots: Sequence[str], write: bool, window: float,
                 log: Callable[[str], None], clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
    """Prove the identity can read each of ``roots`` (and, with ``write``, write under it), retrying authorization
    failures with backoff for ``window`` seconds from the first refusal (not the first request: on a loaded node the
    first request alone, the SDK's start included, may take much of a short window). Other errors are raised at
    once; an authorization failure after the window raises AuthorizationError."""
    started = clock()
    deadline: float | None = None
    delay = AUTH_BACKOFF_FIRST
    for root in roots:
        key = f"{root}/{ACCESS_CHECK_KEY}"
        refused = 0
        while True:
            try:
                store.stat(key)
                if write:
                    store.put(key, json.dumps({"checked": "write access of the weight sync"}).encode())
                if refused:
                    log(f"access to {root} granted after {refused} refusal(s), {clock() - started:.0f} s")
                break
            except Exception as e:  # noqa: BLE001 - only authorization failures are retried
                if not is_authorization_error(e):
                    raise
                refused += 1
                if deadline is None:
                    deadline = clock() + max(0.0, window)
                left = deadline - clock()
                if left <= 0:
                    what = "write to" if write else "read"
                    raise AuthorizationError(
                        f"this pod's identity may not {what} {root}: still refused {clock() - started:.0f} s after its "
                        f"first attempt ({_summary(e)}). A new role grant or federated credential takes a while to "
                        "propagate (Azure: up to 10 minutes; Google Cloud: up to 7 minutes or longer), and a retry "
                        "of this pod waits again; if it persists, check that the pod's Kubernetes service account is "
                        "the one bound to the bucket's identity and that the identity holds the bucket's "
                        f"{'writer' if write else 'reader'} role") from e
                wait = min(delay, left)
                log(f"access to {root} refused ({_summary(e)}); a new grant may still be propagating: retrying in "
                    f"{wait:.1f} s ({left:.0f} s of the window left)")
                sleep(wait)
                delay = min(delay * 2, AUTH_BACKOFF_MAX)
