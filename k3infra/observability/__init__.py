"""Operating a deployment: metrics through each cloud's managed Prometheus, the Kimi K3 dashboard, alert rules,
and the 002 §7 checklist run inside the stack after every rollout.

- ``rules``: the alerts, cloud-neutral; each cloud's ``monitoring`` module turns them into its rule objects;
- ``dashboard``: the Grafana dashboard per engine (committed under ``dashboards/``);
- ``scrape``: what every cloud's scrape object selects (the server's leader pods, the serving port);
- ``verify_job``: the in-cluster verification Job and the stack output it produces; ``checklist`` is the code
  that Job runs (``k3infra.verify`` itself, shipped in a ConfigMap).

The metric names the queries use (engine, DCGM, kube-state-metrics; checked against the pinned releases) are facts:
``k3infra.catalog.metrics``, where the serving layer's scalers read them too.

Only ``checklist`` and ``k3infra.verify`` run inside the cluster; they import nothing else of k3infra.
"""
