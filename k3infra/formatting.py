"""How figures read where people read them: the command line's tables and the generated documentation."""


def money(x: float) -> str:
    """USD without cents, with thousands separators: ``43,070``."""
    return f"{x:,.0f}"


def duration(seconds: int) -> str:
    """A duration to the minute above an hour, to the second below: ``1 h 12 min``, ``5 min 12 s``."""
    h, rem = divmod(int(seconds), 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h} h {m} min"
    if m:
        return f"{m} min {s} s" if s else f"{m} min"
    return f"{s} s"
