"""An existing Kubernetes cluster (``cloud: kubernetes``): the serving layer only, on a cluster given by a kubeconfig.

``deployment.deploy`` reaches the cluster through a Kubernetes provider built from the kubeconfig (the
``k3infra:kubeconfig`` secret or ``kubernetes.kubeconfigPath``), checks at preview what the stack says the cluster
already runs (``presence``), installs what it says to install, and hands serving the cluster's GPU nodes and the
weight store (``store``). No cloud provider is loaded.
"""
