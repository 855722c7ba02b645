"""The Hub side: a file's bytes, in order, as they arrive."""

from __future__ import annotations

import os
from typing import Iterator

from .plan import RepoFile
from .sizes import READ_CHUNK


def hub_stream(f: RepoFile, revision: str, token: str | None, chunk: int = READ_CHUNK) -> Iterator[bytes]:
    """The bytes of ``f``, in order, as they arrive: hf_xet's ordered stream for Xet-stored files, else
    ``HfFileSystem``'s streaming read (which reconnects at the current offset on a dropped connection)."""
    if f.xet_hash and os.environ.get("K3_COPY_DISABLE_XET") != "1":
        stream = _xet_stream(f, revision, token)
        if stream is not None:
            yield from stream
            return
    from huggingface_hub import HfFileSystem, constants  # pyright: ignore[reportMissingImports]

    fs = HfFileSystem(endpoint=constants.ENDPOINT, token=token)  # one cached instance per endpoint and token
    with fs.open(f"{f.repo}/{f.path}", "rb", revision=revision, block_size=0) as src:
        while True:
            data = src.read(chunk)
            if not data:
                return
            yield bytes(data)  # pyright: ignore[reportArgumentType] - a binary-mode file reads bytes


def _xet_stream(f: RepoFile, revision: str, token: str | None) -> Iterator[bytes] | None:
    try:
        import hf_xet  # pyright: ignore[reportMissingImports]
        from huggingface_hub import constants  # pyright: ignore[reportMissingImports]
        from huggingface_hub.utils import build_hf_headers  # pyright: ignore[reportMissingImports]
        from huggingface_hub.utils._xet import (  # pyright: ignore[reportMissingImports]
            XetTokenType,
            get_xet_session,
            xet_connection_info_refresh_url,
        )
    except ImportError:
        return None
    from urllib.parse import quote

    refresh = xet_connection_info_refresh_url(token_type=XetTokenType.READ, repo_id=f.repo, repo_type="model",
                                              revision=quote(revision, safe=""), endpoint=constants.ENDPOINT)
    group = get_xet_session().new_download_stream_group(
        token_refresh_url=refresh, token_refresh_headers=build_hf_headers(token=token))
    info = getattr(hf_xet, "XetFileInfo")(f.xet_hash, f.size)  # a compiled module: no stubs
    return iter(group.download_stream(info))
