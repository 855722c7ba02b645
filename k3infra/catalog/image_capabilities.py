"""What the container images that call AWS with their pod's identity can read: EKS Pod Identity and IRSA reach a
container through its AWS SDK, and only SDK releases from the minimums below read Pod Identity's container
credentials (issue 36's version x capability class, for images). tests/test_version_capabilities.py finds every
container that names an ``s3://`` location under a service account with a Pod Identity association or an IRSA role,
and fails unless its image is recorded here with that mechanism.
"""

from types import MappingProxyType
from typing import Mapping

from .capabilities import ANY_KUBERNETES, Capability as C, VersionFacts, facts
from .engines import ENGINES
from .tools import AWS_CLI_IMAGE
from .types import EngineName

POD_IDENTITY_MINIMUM_SDK: Mapping[str, str] = MappingProxyType({
    "aws-cli": "2.15.0", "botocore": "1.34.41", "aws-sdk-cpp": "1.11.263", "aws-sdk-go": "1.47.11"})
"""The oldest release of each AWS SDK that reads EKS Pod Identity's credentials (EKS User Guide, pod-id-minimum-sdk:
"the containers in your Pods must use an AWS SDK version that supports assuming an IAM role from the EKS Pod Identity
Agent")."""

COPIER_IMAGE = "docker.io/library/python:3.12.11-slim-bookworm"
"""The weight copier's image (k3infra.weightcopy.delivery.IMAGE): its AWS client is the botocore its locked
requirements install (k3infra/weightcopy/requirements/s3.txt)."""
COPIER_BOTOCORE = "1.43.117"
"""botocore as k3infra/weightcopy/requirements/s3.txt locks it (a test reads the file)."""

_MINIMUMS = "EKS User Guide, pod-id-minimum-sdk"

IMAGES: Mapping[str, VersionFacts] = MappingProxyType({
    AWS_CLI_IMAGE: facts(ANY_KUBERNETES, f"AWS CLI {AWS_CLI_IMAGE.rsplit(':', 1)[1]}: the first v2 that reads EKS Pod "
                         f"Identity is {POD_IDENTITY_MINIMUM_SDK['aws-cli']} ({_MINIMUMS}); botocore's chain reads "
                         "IRSA's web identity token", C.EKS_POD_IDENTITY, C.IRSA),
    COPIER_IMAGE: facts(ANY_KUBERNETES, f"the copier's botocore {COPIER_BOTOCORE} (weightcopy/requirements/s3.txt); "
                        f"Pod Identity from botocore {POD_IDENTITY_MINIMUM_SDK['botocore']} ({_MINIMUMS})",
                        C.EKS_POD_IDENTITY, C.IRSA),
    ENGINES[EngineName.VLLM].default_image: facts(
        ANY_KUBERNETES, "vLLM's RunAI streamer reads S3 through aws-sdk-cpp (run-ai/runai-model-streamer "
        ".devcontainer/Dockerfile builds 1.11.584); Pod Identity from aws-sdk-cpp "
        f"{POD_IDENTITY_MINIMUM_SDK['aws-sdk-cpp']} ({_MINIMUMS})", C.EKS_POD_IDENTITY, C.IRSA,
        unconfirmed="the streamer release inside the image and its aws-sdk-cpp build: check `pip show "
                    "runai-model-streamer-s3` in the image against its release's Dockerfile"),
})
"""The images that call AWS with their pod's identity, by reference."""
