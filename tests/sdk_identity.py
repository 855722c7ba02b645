"""What a name in an SDK package is bound to, comparable across processes (tests/test_sdk_imports.py runs it on
both sides: imported here, and in a subprocess under the command's lazy packages)."""

import sys
from types import ModuleType


def identity(obj: object) -> list[object]:
    """A module by name; anything else by type, defining module and qualified name, and whether it is the very
    object its defining module holds under that name (False for a second copy of a class)."""
    if isinstance(obj, ModuleType):
        return ["module", obj.__name__]
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    home = sys.modules.get(module) if isinstance(module, str) else None
    original = (home is not None and isinstance(qualname, str) and "." not in qualname
                and getattr(home, qualname, None) is obj)
    return [type(obj).__name__, module, qualname if qualname is not None else repr(obj), original]


def star_names(package: str) -> list[str]:
    """The names ``from PACKAGE import *`` binds."""
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)
    return sorted(n for n in namespace if n != "__builtins__")
