"""Runtime checks of component arguments (a TypedDict is not enforced at run time, and other languages send dicts)."""

from typing import Any, Mapping

import pulumi


def reject_unknown(args: Mapping[str, Any], typed: Any) -> None:
    """Raise ``InputPropertyError`` for a key ``typed`` (a TypedDict class) does not declare.

    Without this a misspelt or unsupported argument (``identity_type="SystemAssigned"``) would be dropped
    without a word.
    """
    known = set(typed.__required_keys__) | set(typed.__optional_keys__)
    for key in sorted(set(args) - known):
        raise pulumi.InputPropertyError(key, f"{typed.__name__} has no argument {key!r}; it takes "
                                        + ", ".join(sorted(known)))
    for key in sorted(set(typed.__required_keys__) - set(args)):
        raise pulumi.InputPropertyError(key, f"{typed.__name__} requires {key!r}")
