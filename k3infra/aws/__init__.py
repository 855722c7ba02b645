"""AWS: EKS on an EC2 Capacity Block (002 §3.2) and SageMaker HyperPod with the Inference Operator (002 §3.1).

Components (import them from ``k3infra``, which loads this package only when asked):

- ``EksCluster`` (cluster.py): VPC, EKS in API authentication mode, add-ons, CPU system pool, Kubernetes provider.
- ``EksGpuNodeGroup`` (nodegroup.py): the Capacity Block launch template, EFA interfaces, the GPU node group.
- ``S3WeightBucket`` (bucket.py): the private weight bucket, its Pod Identity roles, Mountpoint for Amazon S3.
- ``HyperPodCluster``, ``HyperPodEndpoint`` (hyperpod.py): HyperPod on the EKS orchestrator and the model
  served by the Inference Operator.

``deployment.deploy(cfg)`` composes them (and ``k3infra.serving.serve`` on EKS) for the aws-eks and
aws-hyperpod stacks. Pure helpers: policies.py (IAM documents), efa.py (network-card layouts), network.py
(subnet plan), capacity.py (Capacity Block lookups and checks), kubeconfig.py.
"""
