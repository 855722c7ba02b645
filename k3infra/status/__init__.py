"""``k3infra status``: where a deployed stack is in its cold start, read from the cluster with a read-only role.

``expected`` says what the stack's plan deploys (from k3infra's own render, nothing per cloud), ``kube`` reads the
cluster through a kubeconfig, ``report`` turns both into phases with budgets from the sizing, ``access`` is the
read-only role that is all ``status`` needs, and ``display`` prints a report (table, JSON, live).
"""
