"""The managed platforms' own status: HyperPod's InferenceEndpointConfig (on the EKS cluster, ``hyperpod``) and
PAI-EAS's DescribeService (``eas``)."""
