"""Hosts every public k3infra component for other languages (``pulumi package add <repo>/components``).

The language host runs this file with the engine's address; ``component_provider_host`` infers the schema
from the components' annotations (see ``k3infra/multilang.py``) and serves ``Construct`` calls.
"""

import sys
from pathlib import Path

# Run from a checkout, k3infra is the directory above; installed (requirements.txt), this is harmless.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi.provider.experimental import component_provider_host  # noqa: E402

from k3infra.multilang import PACKAGE, VERSION, hosted_components  # noqa: E402

if __name__ == "__main__":
    component_provider_host(components=hosted_components(), name=PACKAGE, version=VERSION)
