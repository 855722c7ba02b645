"""The Pulumi program entry point: `pulumi up -s <stack>` runs this."""

from k3infra.program import main

main()
