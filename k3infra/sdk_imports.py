"""Provider SDK service packages loaded one resource module at a time, in the ``k3infra`` command's process.

A generated Pulumi provider SDK is lazy one level down only: ``pulumi_gcp`` defers ``pulumi_gcp.compute``, but
the first use of ``gcp.compute.Network`` runs ``compute/__init__.py``, which star-imports every one of the
package's 300 resource and function modules. A plan of ``gcp-a4xmax`` uses 6 of them and paid about 1 s of
its 4 s for the rest (``python -X importtime -m k3infra plan gcp-a4xmax``; ``benchmarks/plan_time.py``).

:func:`install` puts a finder first on ``sys.meta_path`` that loads such a package without running its
``__init__``: the package gets the header's names and a module ``__getattr__`` (PEP 562) that, for a name, imports
the one module whose ``__all__`` lists it, as the star import would have, and binds that module's names on the
package, later star imports winning as they do in ``__init__``. A package whose ``__init__`` is anything but the
generated header and star imports is imported as usual, so an SDK that changes its layout is only slower.

Only the command installs it (``k3infra.cli.main``); a program that imports k3infra's components, and
``pulumi up``, import the SDKs as they ship. tests/test_sdk_imports.py holds every name of every SDK package
the stacks' plans load identical under both imports, and the command's plan equal to the in-process one.
"""

import builtins
import importlib
import importlib.abc
import importlib.machinery
import re
import sys
import typing
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

#: The provider SDKs whose generated service packages are loaded lazily.
SDK_ROOTS = frozenset({"pulumi_gcp", "pulumi_kubernetes", "pulumi_aws", "pulumi_azure_native", "pulumi_alicloud"})

_HEADER = {"import builtins as _builtins", "import typing", "from . import outputs"}
_UTILITIES = re.compile(r"from (\.+) import _utilities")
_STAR = re.compile(r"from \.(\w+) import \*")
_ALL = re.compile(r"^__all__ = \[([^\]]*)\]", re.M)
_NAME = re.compile(r"'([^']+)'")


def star_imports(init: Path) -> tuple[list[str], int] | None:
    """The modules a generated ``__init__`` star-imports, in order, and its ``_utilities`` import's level.

    None when the file holds anything else, or no star import: such a package is imported as usual.
    """
    modules: list[str] = []
    level = 0
    for raw in init.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line in _HEADER:
            continue
        if m := _UTILITIES.fullmatch(line):
            level = len(m.group(1))
        elif m := _STAR.fullmatch(line):
            modules.append(m.group(1))
        else:
            return None
    return (modules, level) if modules and level else None


def exported(module: Path) -> list[str]:
    """The names a generated module's ``__all__`` lists (near its top; ``_inputs`` lists thousands)."""
    with module.open() as f:
        head = f.read(8192)
        found = _ALL.search(head) or _ALL.search(head + f.read())
    if found is None:
        raise ImportError(f"{module} has no __all__: cannot tell which names its star import binds")
    return _NAME.findall(found.group(1))


class _Package:
    """The ``__getattr__`` and ``__dir__`` of one lazily loaded package."""

    def __init__(self, module: ModuleType, modules: Sequence[str]):
        self.module = module
        self.modules = modules
        self._where: dict[str, str] | None = None

    def where(self) -> dict[str, str]:
        """Each name the package's star imports bind, to the module the last of them takes it from."""
        if self._where is None:
            folder = Path(self.module.__file__ or "").parent
            self._where = {name: sub for sub in self.modules for name in exported(folder / f"{sub}.py")}
        return self._where

    def getattr(self, name: str) -> object:
        """The attribute NAME, importing the module that defines it (or the submodule NAME) on first use."""
        if name.startswith("__"):
            raise AttributeError(name)
        package = self.module.__name__
        sub = self.where().get(name)
        if sub is None:
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as e:
                if e.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        source = importlib.import_module(f"{package}.{sub}")
        # As `from .sub import *` does, and after the import bound the submodule itself on the package: a
        # pulumi_kubernetes module is named like its class (core/v1/Service.py defines Service).
        for bound, where in self.where().items():
            if where == sub:
                setattr(self.module, bound, getattr(source, bound))
        return getattr(source, name)

    def dir(self) -> list[str]:
        """The names loaded so far and every name the star imports would bind."""
        return sorted(set(vars(self.module)) | set(self.where()))


class _Loader(importlib.abc.Loader):
    def __init__(self, modules: list[str], level: int):
        self.modules, self.level = modules, level

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        package = _Package(module, self.modules)
        root = module.__name__.rsplit(".", self.level - 1)[0]  # `from .. import _utilities`: the parent
        module.__dict__.update(_builtins=builtins, typing=typing, _utilities=importlib.import_module(f"{root}._utilities"),
                               __getattr__=package.getattr, __dir__=package.dir)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if path is None or fullname.partition(".")[0] not in SDK_ROOTS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.submodule_search_locations or not spec.origin:
            return spec
        layout = star_imports(Path(spec.origin))
        if layout is not None:
            spec.loader = _Loader(*layout)
        return spec


def install() -> None:
    """Load the SDKs' service packages lazily in this process from now on (idempotent)."""
    if not installed():
        sys.meta_path.insert(0, _Finder())


def installed() -> bool:
    """Whether :func:`install` has run in this process."""
    return any(isinstance(f, _Finder) for f in sys.meta_path)
