"""Provider SDK service packages loaded one resource module at a time, in the ``k3infra`` command's process.

A generated Pulumi provider SDK is lazy one level down only: ``pulumi_gcp`` defers ``pulumi_gcp.compute``, but
the first use of ``gcp.compute.Network`` runs ``compute/__init__.py``, which star-imports every resource and
function module of the package (286 in pulumi_gcp 10.2.0), while a plan of ``gcp-a4xmax`` uses 6 of them.
``benchmarks/plan_time.py`` measures what that costs (docs/development.md has the figures).

:func:`install` puts a finder first on ``sys.meta_path`` that loads such a package without running its
``__init__``. The package gets the header's names, an ``__all__`` of the names a star import of the eager package
binds, and a module ``__getattr__`` (PEP 562) that, for a name, imports the one module whose ``__all__`` lists it,
as ``from .module import *`` does, and binds that module's names on the package, a later star import winning as
in ``__init__``. A package is imported as usual unless its ``__init__`` is the generated header and star imports
only, and every module it star-imports lists its names in ``__all__`` (pulumi_kubernetes.helm.v3's hand-written
helm.py does not): an SDK that changes its layout is only slower.

Only the command installs it (``k3infra.cli.main``); a program that imports k3infra's components, and
``pulumi up``, import the SDKs as they ship. tests/test_sdk_imports.py holds every name of every SDK package
the stacks' plans load identical under both imports, every installed SDK package's lazy binding equal to what
its ``__init__`` binds, and the command's plan equal to the in-process one.
"""

import builtins
import importlib
import importlib.abc
import importlib.machinery
import re
import sys
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

#: The provider SDKs whose generated service packages are loaded lazily.
SDK_ROOTS = frozenset({"pulumi_gcp", "pulumi_kubernetes", "pulumi_aws", "pulumi_azure_native", "pulumi_alicloud"})

_HEADER = {"import builtins as _builtins", "import typing", "from . import outputs"}
_UTILITIES = re.compile(r"from (\.+) import _utilities")
_STAR = re.compile(r"from \.(\w+) import \*")
_ALL = re.compile(r"^__all__ = \[([^\]]*)\]", re.M)
_NAME = re.compile(r"'([^']+)'")


@dataclass(frozen=True)
class Layout:
    """What a generated package's ``__init__`` does: its star imports in order and its ``_utilities`` import."""

    modules: tuple[str, ...]
    """The modules it star-imports, in order."""
    utilities_level: int
    """The dots of ``from .. import _utilities``: 2 for ``pulumi_gcp.compute``, 3 for ``pulumi_kubernetes.core.v1``."""
    where: dict[str, str]
    """Each name the star imports bind, to the last module that exports it (the one whose binding stays)."""
    header: frozenset[str]
    """The header lines it has (``from . import outputs`` only where the package has an ``outputs`` module)."""

    def all(self) -> list[str]:
        """The names ``from package import *`` takes from the eager package (it has no ``__all__``: every public
        name in its namespace, the star-imported modules and the header's ``outputs`` and ``typing`` included)."""
        imported = {line.rsplit(" ", 1)[-1] for line in self.header}  # _builtins, typing, outputs
        public = set(self.where) | set(self.modules) | imported
        return sorted(n for n in public if not n.startswith("_"))


def exported(module: Path) -> list[str] | None:
    """The names a generated module's ``__all__`` lists (near its top; ``_inputs`` lists thousands); None when it
    has none, or an empty or unreadable one."""
    with module.open(encoding="utf-8") as f:
        head = f.read(8192)
        found = _ALL.search(head) or _ALL.search(head + f.read())
    names = _NAME.findall(found.group(1)) if found else []
    return names or None


def generated_init(init: Path) -> tuple[list[str], int, set[str]] | None:
    """What a generated ``__init__`` star-imports, its ``_utilities`` import's level and its header lines; None when
    it holds anything else. Read for every package the SDK's lazy_import looks up, so it reads only this file."""
    modules: list[str] = []
    header: set[str] = set()
    level = 0
    for raw in init.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line in _HEADER:
            header.add(line)
        if not line or line.startswith("#") or line in _HEADER:
            continue
        if m := _UTILITIES.fullmatch(line):
            level = len(m.group(1))
        elif m := _STAR.fullmatch(line):
            modules.append(m.group(1))
        else:
            return None
    return (modules, level, header) if modules and level else None


def layout(init: Path) -> Layout | None:
    """The layout of a generated package, or None when it is anything else, or a module it star-imports does not
    list its names in ``__all__`` (the package is then imported as usual)."""
    found = generated_init(init)
    if found is None:
        return None
    modules, level, header = found
    where: dict[str, str] = {}
    for module in modules:
        path = init.parent / f"{module}.py"
        names = exported(path) if path.is_file() else None
        if names is None:
            return None
        where.update(dict.fromkeys(names, module))
    for i, module in enumerate(modules):
        # A module's import binds it on the package after the names of the star imports before it.
        if module in where and modules.index(where[module]) < i:
            del where[module]
    return Layout(tuple(modules), level, where, frozenset(header))


class _Package:
    """The ``__getattr__`` of one lazily loaded package."""

    def __init__(self, module: ModuleType, layout: Layout):
        self.module = module
        self.layout = layout
        self.bound_from: dict[str, list[str]] = {}
        """Each module, to the names whose binding on the package it keeps (``layout.where`` inverted once)."""
        for name, source in layout.where.items():
            self.bound_from.setdefault(source, []).append(name)

    def getattr(self, name: str) -> object:
        """The attribute NAME, importing the module that defines it (or the submodule NAME) on first use."""
        if name.startswith("__"):
            raise AttributeError(name)
        package, where = self.module.__name__, self.layout.where
        sub = where.get(name)
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
        for bound in self.bound_from[sub]:
            setattr(self.module, bound, getattr(source, bound))
        return getattr(source, name)

    def dir(self) -> list[str]:
        """The names loaded so far, every name the star imports bind and every module of the package."""
        folder = Path(self.module.__file__ or "").parent
        modules = {p.stem for p in folder.glob("*.py")} | {p.parent.name for p in folder.glob("*/__init__.py")}
        return sorted(set(vars(self.module)) | set(self.layout.where) | (modules - {"__init__"}))


class _Loader(importlib.abc.Loader):
    """Runs when the package is first used (the SDK's lazy_import defers it): reads its modules' ``__all__``, and
    runs the real ``__init__`` where one lacks it."""

    def __init__(self, eager: importlib.abc.Loader):
        self.eager = eager

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        found = layout(Path(module.__file__ or ""))
        if found is None:
            self.eager.exec_module(module)
            return
        package = _Package(module, found)
        root = module.__name__.rsplit(".", found.utilities_level - 1)[0]  # `from .. import`: the parent
        module.__dict__.update(_builtins=builtins, typing=typing, _utilities=importlib.import_module(f"{root}._utilities"),
                               __all__=found.all(), __getattr__=package.getattr, __dir__=package.dir)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if path is None or fullname.partition(".")[0] not in SDK_ROOTS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.submodule_search_locations or not spec.origin:
            return spec
        if isinstance(spec.loader, importlib.abc.Loader) and generated_init(Path(spec.origin)) is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def install() -> None:
    """Load the SDKs' service packages lazily in this process from now on (idempotent)."""
    if not installed():
        sys.meta_path.insert(0, _Finder())


def installed() -> bool:
    """Whether :func:`install` has run in this process."""
    return any(isinstance(f, _Finder) for f in sys.meta_path)
