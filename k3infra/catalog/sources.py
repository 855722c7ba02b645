"""Citations used by catalog entries.

Seeds are cited by file and section, e.g. ``"002 §4.1"`` for section 4.1 of
``seeds/002_7fb375d91ad0cba6.txt``. Anything that is not in the seeds names its vendor page, or says
``ASSUMPTION`` / ``ESTIMATE`` and why.
"""

SEED_GCP = "seeds/000_2a064941cc3e1bbb.txt"
"""Google Cloud guide: SGLang TP=16 on 2 x A4 with RDMA, DSPARK, RunAI streamer from GCS FUSE."""

SEED_MULTICLOUD = "seeds/002_7fb375d91ad0cba6.txt"
"""Multi-cloud guide: model facts, fit table, per-cloud mapping, canonical vLLM arguments."""


def seed(file_id: str, section: str) -> str:
    """Return the citation for a seed section, e.g. ``seed("002", "§4.1")``."""
    return f"{file_id} {section}"
