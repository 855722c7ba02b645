"""Alibaba Cloud: ACK with a GPU node pool and OSS weights (002 §6.3), and PAI-EAS (002 §6.2).

Components: ``AckCluster``, ``AckGpuNodePool``, ``OssWeightBucket``, ``PaiEasService``; ``deployment.deploy``
composes them for the ``ack`` and ``pai-eas`` platforms. Importing this package loads pulumi_alicloud.
"""
