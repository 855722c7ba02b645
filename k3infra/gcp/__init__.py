"""Google Cloud: GKE cluster, reserved GPU node pool, GCS weight bucket, and the deployment that composes them.

Components (``k3infra:index:<Name>``): :class:`GkeCluster`, :class:`GkeGpuNodePool`, :class:`GcsWeightBucket`.
They are imported lazily (``from k3infra import GkeGpuNodePool``) so a program loads only the SDKs it uses.
"""
