"""``python -m k3infra`` runs the command line."""

from .cli import main

main()
