"""The custom resource of SageMaker HyperPod's inference operator that k3infra creates and ``k3infra status`` reads.

Source: aws/sagemaker-hyperpod-cli 011ca92, ``helm_chart/HyperPodHelmChart/charts/inference-operator/config/crd/
inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml`` (vendored as
schemas/crds/hyperpod-inferenceendpointconfigs.yaml, schemas/crds/SOURCES.md): ``spec.group``, ``spec.names.kind``,
``spec.names.plural``, and the served version ``v1``.
"""

IEC_GROUP = "inference.sagemaker.aws.amazon.com"
"""The API group of the InferenceEndpointConfig."""
IEC_VERSION = "v1"
"""The version k3infra writes (the CRD serves v1 and v1alpha1)."""
IEC_API_VERSION = f"{IEC_GROUP}/{IEC_VERSION}"
"""``apiVersion`` of an InferenceEndpointConfig."""
IEC_KIND = "InferenceEndpointConfig"
"""``kind`` of the resource."""
IEC_RESOURCE = "inferenceendpointconfigs"
"""Its plural: the resource an RBAC rule and a URL path name."""
